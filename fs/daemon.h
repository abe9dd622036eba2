/*
 * daemon.h: part of the FUSE daemon (the adapter between the kernel's
 * FUSE requests and lib/ calls): what fuse_main.c and fuse_ops.c share.
 * Private to fs/.
 *
 * All of a mount's state is one struct tfs_daemon, made by main() and
 * handed to the FUSE session as its userdata: handlers find it with
 * fuse_req_userdata(req), op_init() and op_destroy() get it as their
 * data argument.  Only the log's destination is file-level state (in
 * log.c), because lib/ reports errors through a callback that takes no
 * context (tfs_fs_opts.log).
 */
#ifndef TFS_DAEMON_H
#define TFS_DAEMON_H

#include <pthread.h>
#include <stdint.h>

#include "config.h"
#include "statedir.h"

struct tfs_fs;
struct tfs_inval;
struct tfs_transport;
struct fuse_lowlevel_ops;

struct tfs_daemon {
	struct tfs_fs *fs;		 /* the mounted file system */
	struct tfs_config cfg;		 /* defaults, then -c, then -o */
	double attr_timeout;		 /* [mount] attr_timeout_ms, in s */
	struct tfs_statedir statedir;	 /* /.tensorfs */
	struct tfs_inval *inval;	 /* drops the kernel's pages (inval.c);
					   from start_daemon() */
	struct tfs_transport *transport; /* hooks on /dev/fuse, io_uring
					    (transport.c) */
	/* what INIT negotiated beyond libfuse (transport.c sets them
	 * before the first request after INIT) */
	int direct_io_allow_mmap; /* FUSE_DIRECT_IO_ALLOW_MMAP */
	int killpriv_v2;	  /* FUSE_HANDLE_KILLPRIV_V2: we clear
					 setuid and capabilities */
	int parallel_dio;	  /* FOPEN_PARALLEL_DIRECT_WRITES taken */
	int atime;		  /* TFS_ATIME_*, from -o */
	int nodiratime;		  /* -o nodiratime */
	struct {		  /* inodes open O_RDWR (fuse_ops.c) */
		pthread_mutex_t mu;
		struct {
			uint64_t ino;
			uint32_t n; /* open files */
		} * v;
		size_t n, cap;
	} rw;
};

/* The request handlers, for fuse_session_new() with a struct tfs_daemon
 * as userdata. */
extern const struct fuse_lowlevel_ops tfs_daemon_ops;

/*
 * Log a line with priority prio (LOG_ERR, ...): on the terminal while it
 * is attached, and to syslog or the log file once daemonised (log.h has
 * the rules).  Thread safe.
 */
void tfs_daemon_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
