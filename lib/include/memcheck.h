/*
 * memcheck.h: will a memory budget fit this machine?
 *
 * The mount refuses a cache plus write-back pool plus metadata tree that
 * the machine cannot give it, rather than letting the kernel's OOM killer
 * or swap decide later.  "Available" is the smaller of /proc/meminfo's MemAvailable and,
 * inside a cgroup v2 with a limit, memory.max minus memory.current.
 */
#ifndef TFS_MEMCHECK_H
#define TFS_MEMCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct tfs_mem_limits {
	uint64_t mem_available; /* MemAvailable, bytes */
	uint64_t cgroup_free;	/* memory.max - memory.current, or UINT64_MAX */
	uint64_t memlock;	/* RLIMIT_MEMLOCK soft limit, or UINT64_MAX */
	char cgroup[512];	/* the cgroup's path, "" if none */
};

/* Read the limits of this process.  Returns 0 or -errno. */
int tfs_mem_limits(struct tfs_mem_limits *l);

/*
 * What one file of the metadata tree (lib/meta.c) costs in RAM, for
 * memory budgets: a regular file of one extent with a name of up to 32
 * bytes, in a directory of many, with every table just grown (least
 * full).  Its inode 160, its entry 56, its
 * extent array 48 (a malloc chunk), its slots in the inode table 21, in
 * the directory's index 11 and order 16: 312.  Measured with a million
 * files in one directory: 298 bytes each with one extent and 32-byte
 * names (test_meta.c, which fails above this), 266 with 7-byte names, 218
 * empty with 7-byte names.  Each further extent adds up to
 * TFS_META_BYTES_PER_EXTENT (32 bytes, in an array that doubles).
 */
#define TFS_META_BYTES_PER_FILE	  320u
#define TFS_META_BYTES_PER_EXTENT 64u

/*
 * The metadata tree stays in RAM (lib/meta.c), TFS_META_BYTES_PER_FILE
 * per inode.  A mount budgets it for the inodes it has plus room to grow:
 * a quarter more, and at least TFS_MEM_HEADROOM_FILES more (4 MiB), since
 * a training run creates its swap and checkpoint files once and then
 * rewrites them.  A mount that grows past the budget still works; it is
 * the check that assumed less.
 */
#define TFS_MEM_HEADROOM_FILES 16384u

/* The bytes budgeted for the tree of a file system of 'files' inodes
 * (saturating at UINT64_MAX). */
uint64_t tfs_mem_meta_bytes(uint64_t files);

/*
 * Check that cache + pool + the tree of 'files' inodes
 * (tfs_mem_meta_bytes()) fit in the available memory with 'spare' bytes to
 * spare, and that when pinned cache and pool fit RLIMIT_MEMLOCK (the tree
 * is not pinned).  Returns 0, or -ENOMEM / -EPERM with err giving the
 * numbers and the key to lower.
 */
int tfs_mem_check(const struct tfs_mem_limits *l, uint64_t cache, uint64_t pool,
		  uint64_t files, int pinned, uint64_t spare, char *err,
		  size_t errlen);

/*
 * tfs_mem_check() of the cache, pool and pin_memory that c sets, with
 * every key that makes up the sums named in err with its value and where
 * it came from (tfs_config_describe(): "from tensorfs.ini:12", "from -o
 * offload_param.buffer_size=1e10", "by default"), and which to lower
 * first: the keys of the larger of cache and pool.
 */
int tfs_mem_check_config(const struct tfs_mem_limits *l,
			 const struct tfs_config *c, uint64_t files,
			 uint64_t spare, char *err, size_t errlen);

#endif
