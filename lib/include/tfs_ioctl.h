/*
 * tfs_ioctl.h: the ioctls the daemon answers on a mount's /.tensorfs
 * directory, shared by the daemon (fs/) and the tools that send them.
 */
#ifndef TFS_IOCTL_H
#define TFS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

/*
 * tensorfs's own ioctls, answered on the /.tensorfs directory only (an
 * open of it, O_RDONLY, as root or the mount's owner).
 *
 *   TFS_IOC_SET_RO     write everything back, mark the device clean,
 *                      refuse every change from then on
 *                      (tfs_fs_set_readonly()); no argument
 *   TFS_IOC_SET_RW     take changes again; no argument
 *   TFS_IOC_SET_ATIME  the atime policy from then on, an int
 *                      TFS_ATIME_* (tfs_fs_set_atime())
 *   TFS_IOC_SET_DIRATIME  whether listings move directories' atimes
 *                      from then on, an int 1 (diratime) or 0
 *                      (nodiratime) (tfs_fs_set_diratime())
 *   TFS_IOC_SNAPSHOT   a snapshot of a tree (tfs_snapshot()), a struct
 *                      tfs_ioc_snap in and out (tensorfs-snap sends it)
 *
 * "tensorfs -o remount,..." sends them around its mount(MS_REMOUNT):
 * SET_RO or SET_RW, then SET_ATIME if the -o list has an atime option,
 * then SET_DIRATIME if it has diratime or nodiratime.
 */
#define TFS_IOC_MAGIC	     0xb5
#define TFS_IOC_SET_RO	     _IO(TFS_IOC_MAGIC, 1)
#define TFS_IOC_SET_RW	     _IO(TFS_IOC_MAGIC, 2)
#define TFS_IOC_SET_ATIME    _IOW(TFS_IOC_MAGIC, 3, int)
#define TFS_IOC_SET_DIRATIME _IOW(TFS_IOC_MAGIC, 4, int)

/* TFS_IOC_SNAPSHOT: make the tree whose top has inode number src again
 * as 'name' in the directory dst_parent (both st_ino of the mount). */
struct tfs_ioc_snap {
	uint64_t src, dst_parent;	     /* in */
	char name[256];			     /* in: NUL-terminated */
	uint64_t dirs, files, others, bytes; /* out: made, bytes shared */
};
#define TFS_IOC_SNAPSHOT _IOWR(TFS_IOC_MAGIC, 5, struct tfs_ioc_snap)

#endif
