/*
 * uring.h: part of the FUSE daemon: FUSE requests and replies carried
 * over io_uring (Linux 6.14+) instead of read() and writev() of
 * /dev/fuse.  Private to fs/; uring.c says how and why.
 */
#ifndef TFS_URING_H
#define TFS_URING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

struct tfs_transport;
struct tfs_uring;

/*
 * The queues of session se, whose /dev/fuse descriptor is fd, once the
 * kernel has taken an INIT reply with FUSE_OVER_IO_URING: one queue per
 * possible CPU, as the kernel requires, with threads threads in all
 * (at least one per queue), each with its own ring and one entry of a
 * payload-byte buffer.  NULL with -errno in *err if it could not be
 * made; no thread runs then.  tfs_uring_run() starts them.
 */
struct tfs_uring *tfs_uring_new(struct tfs_transport *tp,
				struct fuse_session *se, int fd, size_t payload,
				unsigned threads, int *err);

/*
 * Start the threads and register every entry with the kernel; once
 * every queue has one, requests arrive over them.  0, or -errno when a
 * thread or a ring could not start: the kernel is then told to stay on
 * /dev/fuse (a registration it refuses turns io_uring off for the
 * connection), and nothing arrives over the queues that did start.
 */
int tfs_uring_run(struct tfs_uring *u);

/*
 * Tell the kernel to keep the connection whose /dev/fuse descriptor is
 * fd on /dev/fuse: after a FUSE_OVER_IO_URING INIT reply whose queues
 * cannot all start, requests would otherwise wait for them for ever.
 */
void tfs_uring_refuse(int fd);

/*
 * If iov (a fuse_out_header, then the reply's arguments) answers a
 * request that came over one of u's queues, hand it to the kernel there:
 * 1, or -errno if it cannot be sent.  0 if the request is not u's (it
 * came over /dev/fuse).  Thread safe; the reply may come from any thread.
 */
int tfs_uring_reply(struct tfs_uring *u, const struct iovec *iov, int count);

/*
 * Where the reply to the request this thread is serving, if it came over
 * io_uring, can be written in place: the payload buffer of its entry,
 * 4096-aligned, of *cap bytes.  A reply whose data lies there goes to the
 * kernel with no copy by the daemon.  NULL for a request that came over
 * /dev/fuse.  Only for a request that carries no payload of its own
 * (READ): the payload buffer holds it otherwise.
 */
void *tfs_uring_reply_room(size_t *cap);

/* Requests served over the queues so far. */
uint64_t tfs_uring_served(const struct tfs_uring *u);

/* "2 queues, 8 threads, 16 MiB of buffers": for the log. */
const char *tfs_uring_describe(const struct tfs_uring *u);

/* End the threads (after the mount is gone from the kernel, or the
 * session's loop has ended), then free.  Both accept NULL. */
void tfs_uring_stop(struct tfs_uring *u);
void tfs_uring_free(struct tfs_uring *u);

#endif
