/*
 * meta.h: the metadata of a mounted tensorfs, in memory.
 *
 * The whole tree lives in RAM while mounted: an inode table, each
 * directory's entries, each file's extent map, xattrs and symlink
 * targets.  The device holds it as a checkpoint plus journal records
 * (format.h); tfs_meta_apply() rebuilds it from those records and
 * tfs_meta_write_records() turns it back into them, so the two are the
 * same code path for mount, recovery, fsck and checkpoint.
 *
 * This is an internal module of lib/: struct tfs_inode is visible to
 * the file system (lib/fs.c and its parts) and lib/check.c, which own
 * the policy (POSIX rules, locking, journaling) and keep their own state
 * in their own structures (the file system's hangs from ip->priv); meta
 * only keeps the structures consistent and counts the bytes a checkpoint
 * of them takes.  Not thread safe: callers hold the
 * file system's metadata lock.
 */
#ifndef TFS_META_H
#define TFS_META_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"
#include "format.h"
#include "memcheck.h"
#include "refs.h"

struct tfs_meta;
struct tfs_dir;

struct tfs_xattr {
	char *name;  /* NUL-terminated, owned */
	void *value; /* owned */
	size_t nlen, vlen;
};

/*
 * One inode: 160 bytes, carved from meta's pool (no malloc header).  The
 * stored attributes come first; the runtime state after them is packed
 * into 32-bit fields.  Pointers to an inode stay valid until
 * tfs_meta_remove() frees it.
 */
struct tfs_inode {
	struct tfs_attr a;     /* ino, mode, size, times, ... */
	struct tfs_extmap map; /* regular files */
	struct tfs_dir *dir;   /* directories */
	char *symlink;	       /* symlinks: target, NUL-terminated */
	struct tfs_xattr *xattrs;
	void *priv; /* the file system's, NULL when new;
					   meta never reads or frees it */
	uint32_t nxattrs;

	/* runtime state, never stored */
	uint32_t opens;		/* open file handles */
	uint32_t wb_errno : 12; /* the last failed write-back's */
	uint32_t wb_unseen : 1; /* ... not yet reported to anyone */
	uint32_t wb_seq : 19;	/* failed write-backs, counted
					   (wrapping; file.c) */
	uint32_t dirty : 1;	/* attrs changed since last commit */
	uint32_t stale : 1;	/* data changed unseen by the
					   caller's cache (tfs_mark_stale) */
	uint32_t nlookup : 30;	/* the kernel's lookup references
					   (FUSE nlookup); sticky at its
					   maximum (file.c) */
};

/*
 * A directory entry: 16 bytes plus the name and its NUL, rounded up to 8,
 * from meta's pool.  Borrowed by callers until the directory changes.
 */
struct tfs_dirent {
	uint64_t ino;
	uint64_t cookie : 48; /* readdir offset, grows per insert */
	uint64_t len : 16;
	char name[]; /* NUL-terminated */
};

struct tfs_meta *tfs_meta_new(void);
void tfs_meta_free(struct tfs_meta *m); /* accepts NULL */

/* Inode numbers: next one to give out; set while loading. */
uint64_t tfs_meta_next_ino(const struct tfs_meta *m);
void tfs_meta_set_next_ino(struct tfs_meta *m, uint64_t next);
/* Inodes in the table, and data blocks all extents map (a block several
 * extents share counted once). */
uint64_t tfs_meta_inodes(const struct tfs_meta *m);
uint64_t tfs_meta_used_blocks(const struct tfs_meta *m);
/* Bytes a checkpoint of the current tree takes. */
uint64_t tfs_meta_bytes(const struct tfs_meta *m);
/*
 * Bytes of RAM the tree holds: every block meta has from malloc (its
 * pool's blocks, hash tables, entry arrays, extent arrays, xattrs and
 * symlink targets), counted at its malloc chunk size as meta allocates and
 * frees it.  Freed inodes and entries stay in the pool for new ones, so
 * this follows the peak of the tree rather than its current size.
 */
uint64_t tfs_meta_ram(const struct tfs_meta *m);

/* What one file costs in RAM: TFS_META_BYTES_PER_FILE, in memcheck.h,
 * where budgets are made; tfs_meta_ram() is what it actually holds. */

/* The inode numbered ino, or NULL (borrowed). */
struct tfs_inode *tfs_meta_get(const struct tfs_meta *m, uint64_t ino);
/* Add an inode with attributes a (a->ino must be free); directories get
 * an empty entry table.  Returns it, or NULL on ENOMEM or a taken ino. */
struct tfs_inode *tfs_meta_add(struct tfs_meta *m, const struct tfs_attr *a);
/* Remove and free an inode with its extents, xattrs and entries; the
 * caller has released its blocks (tfs_meta_each_extent()). */
void tfs_meta_remove(struct tfs_meta *m, struct tfs_inode *ip);
/* Call fn for every inode; stops on a non-zero return, which it returns. */
int tfs_meta_each(struct tfs_meta *m,
		  int (*fn)(struct tfs_inode *ip, void *arg), void *arg);

/* ===== directories ===== */

/* The entry name[0..len) of dir, or NULL (borrowed). */
struct tfs_dirent *tfs_dir_lookup(const struct tfs_inode *dir, const char *name,
				  size_t len);
/* Add an entry; -EEXIST if taken, -ENOMEM. */
int tfs_dir_add(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		size_t len, uint64_t ino);
/* Rename the entry name to newname, keeping its inode and its readdir
 * cookie: -ENOENT if name is absent, -EEXIST if newname is taken,
 * -ENAMETOOLONG, -ENOMEM (dir unchanged on every error). */
int tfs_dir_rename(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		   size_t len, const char *newname, size_t newlen);
/* Remove an entry; -ENOENT if absent. */
int tfs_dir_remove(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		   size_t len);
/* Number of entries. */
uint64_t tfs_dir_count(const struct tfs_inode *dir);
/* The first entry whose cookie is greater than 'after', in cookie order,
 * or NULL at the end.  Cookies are stable while the directory changes:
 * readdir resumes where it was, whatever was added or removed. */
struct tfs_dirent *tfs_dir_next(const struct tfs_inode *dir, uint64_t after);

/* ===== extents ===== */

/* Map or unmap file blocks of ip (see extent.h), keeping the used-block
 * and checkpoint-size counts; 'freed' gets the device ranges released. */
int tfs_meta_map(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		 uint64_t pblk, uint64_t len, uint32_t flags,
		 void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		 void *arg);
int tfs_meta_unmap(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		   uint64_t len,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg);

/*
 * The counts of shared blocks (refs.h), borrowed.  The file system
 * changes them beside the extents: one more for each extent a clone
 * maps onto blocks already mapped, one less for each it unmaps; a
 * REFCOUNT record sets them.  Each whole change leaves every block's
 * count equal to the extents that map it (J12), and the used blocks,
 * the checkpoint's size and the RAM above follow the table.
 */
struct tfs_refs *tfs_meta_refs(struct tfs_meta *m);

/* ===== xattrs and symlinks ===== */

/* The xattr 'name' of ip, or NULL (borrowed). */
struct tfs_xattr *tfs_xattr_find(const struct tfs_inode *ip, const char *name);
/* Set (replace) or delete; -ENOMEM, -ENODATA (delete of a missing one). */
int tfs_xattr_set(struct tfs_meta *m, struct tfs_inode *ip, const char *name,
		  size_t nlen, const void *val, size_t vlen);
int tfs_xattr_del(struct tfs_meta *m, struct tfs_inode *ip, const char *name,
		  size_t nlen);
int tfs_meta_set_symlink(struct tfs_meta *m, struct tfs_inode *ip,
			 const char *target, size_t len);

/* ===== records ===== */

/*
 * Apply one decoded record (replay of a checkpoint or journal).  Returns
 * 0, -ENOMEM, or -EUCLEAN when the record does not fit the tree (an entry
 * for a missing inode, an extent on a directory ...).  'freed' receives
 * the device ranges an EXTENT or PUNCH record releases (may be NULL).
 */
int tfs_meta_apply(struct tfs_meta *m, const struct tfs_rec *r,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg);

/*
 * Encode the whole tree as records into b (inodes with their symlink,
 * xattrs and extents first, then every directory entry, then the counts
 * of shared blocks), calling
 * flush(b, arg) whenever b holds at least 'chunk' bytes; flush consumes
 * the bytes (b->len = 0) or returns -errno to stop.  *nrec receives the
 * number of records.  Returns 0 or the first error.
 */
int tfs_meta_write_records(struct tfs_meta *m, struct tfs_buf *b, size_t chunk,
			   int (*flush)(struct tfs_buf *b, void *arg),
			   void *arg, uint64_t *nrec);

#ifdef TFS_TEST_HOOKS
/*
 * Fault injection, for tests only (-DTFS_TEST_HOOKS=ON): while on, every
 * allocation of the tree's memory fails (ENOMEM), as malloc would; memory
 * already in the tree's free lists is still handed out, as it would be.
 */
void tfs_meta_fail_allocs(struct tfs_meta *m, int on);
#endif

#endif
