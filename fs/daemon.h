/*
 * daemon.h: part of the FUSE daemon (the adapter between the kernel's
 * FUSE requests and lib/ calls): what fuse_main.c and fuse_ops.c share.
 * Private to fs/.
 */
#ifndef TFS_DAEMON_H
#define TFS_DAEMON_H

struct tfs_fs;
struct tfs_config;
struct fuse_lowlevel_ops;

extern struct tfs_fs *g_fs;
extern struct tfs_config g_cfg;
extern double TIMEOUT;
extern int g_foreground;

void logmsg(int prio, const char *fmt, ...);

extern const struct fuse_lowlevel_ops ops;

#endif
