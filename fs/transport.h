/*
 * transport.h: part of the FUSE daemon: how requests and replies travel
 * between the kernel and libfuse's dispatch, and what the connection
 * negotiated beyond what libfuse 3.14 knows.  Private to fs/;
 * transport.c says how and why, uring.c carries FUSE over io_uring.
 */
#ifndef TFS_TRANSPORT_H
#define TFS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

struct tfs_daemon;
struct tfs_transport;

/* [mount] io_uring, in the order of its ENUM words (config.h) */
enum tfs_uring_mode {
	TFS_URING_AUTO = 0, /* io_uring where the kernel allows it */
	TFS_URING_ON = 1,   /* io_uring, or refuse to mount */
	TFS_URING_OFF = 2,  /* /dev/fuse read and write only */
};

/*
 * Whether this kernel lets a daemon carry requests over io_uring: 1, or
 * 0 with the reason in why (what is missing and how to enable it).
 */
int tfs_transport_uring_available(char *why, size_t len);

/*
 * Take over session se's reads and writes of /dev/fuse (after
 * fuse_session_mount(), before its loop starts), for daemon dm, with
 * io_uring as mode says.  NULL without memory.
 */
struct tfs_transport *tfs_transport_new(struct fuse_session *se,
					struct tfs_daemon *dm, int mode);

/* After the session's loop has ended: end the io_uring threads.  Then
 * free.  Both accept NULL. */
void tfs_transport_stop(struct tfs_transport *tp);
void tfs_transport_free(struct tfs_transport *tp);

/*
 * What the connection negotiated, as numbers like the counters: lines for
 * .tensorfs/stats (fmt 0: "name value"), stats.json members (1:
 * ",\n  \"name\": value" each) or Prometheus metrics (2), appended to m:
 * fuse_io_uring (1: requests travel over io_uring), fuse_uring_requests,
 * and fuse_FEATURE 0 or 1 for each feature.
 */
void tfs_transport_render(const struct tfs_transport *tp, int fmt, FILE *m);

/*
 * The request this thread is serving, for its handler.
 * tfs_req_kill_suidgid(): whether the kernel asked for setuid and setgid
 * to go with it (FUSE_WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID,
 * FUSE_OPEN_KILL_SUIDGID), which libfuse 3.14 does not pass on.
 * tfs_req_open_flags(): FOPEN_* flags to add to this OPEN or CREATE
 * request's reply, which libfuse 3.14 cannot set
 * (FOPEN_PARALLEL_DIRECT_WRITES).
 */
int tfs_req_kill_suidgid(void);
/* For uring.c: note the request in buf (n bytes) for its handler, as the
 * read hook does for one read from /dev/fuse. */
void tfs_transport_inspect(struct tfs_transport *tp, const void *buf, size_t n);
void tfs_req_open_flags(uint32_t flags);

#endif
