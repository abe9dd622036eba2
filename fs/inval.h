/*
 * inval.h: part of the FUSE daemon: dropping the kernel's cached pages of
 * a file whose bytes changed behind the page cache, before the change is
 * acknowledged.  Private to fs/; inval.c says how and why.
 */
#ifndef TFS_INVAL_H
#define TFS_INVAL_H

#include <stddef.h>
#include <stdint.h>

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

struct tfs_inval;

/* A new invalidator for session se, its thread started: NULL when out of
 * memory or threads.  Start it after any fork(). */
struct tfs_inval *tfs_inval_new(struct fuse_session *se);

/*
 * Drop the kernel's pages of bytes [off, off + len) of ino (len 0: to the
 * end of the file), then answer req: tfs_inval_reply_write() with
 * fuse_reply_write(req, n), tfs_inval_reply_err() with
 * fuse_reply_err(req, err).  Return at once; the invalidation and the
 * reply come from the invalidator's thread, in the order given.  Thread
 * safe.  With iv NULL, or stopped, they answer at once.
 */
void tfs_inval_reply_write(struct tfs_inval *iv, fuse_req_t req, uint64_t ino,
			   uint64_t off, uint64_t len, size_t n);
void tfs_inval_reply_err(struct tfs_inval *iv, fuse_req_t req, uint64_t ino,
			 uint64_t off, uint64_t len, int err);

/*
 * Make the kernel forget the attributes it holds of ino, at once, from
 * the calling thread (they change in ways it does not expect: setuid
 * cleared by a write).  Its pages stay.
 */
void tfs_inval_attr(struct tfs_inval *iv, uint64_t ino);

/* As tfs_inval_reply_write() with no request to answer (a failed write-back). */
void tfs_inval_range(struct tfs_inval *iv, uint64_t ino, uint64_t off,
		     uint64_t len);

/*
 * Do what is queued and end the thread.  Later calls answer at once and
 * drop the invalidation; the session must outlive the call.  Accepts
 * NULL.  tfs_inval_free() stops it first if need be, then frees it.
 */
void tfs_inval_stop(struct tfs_inval *iv);
void tfs_inval_free(struct tfs_inval *iv);

#endif
