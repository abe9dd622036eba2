/*
 * check.c: what tensorfs-fsck checks beyond what loading verified.
 *
 * What the walks learn of each inode is kept in a table of the check's
 * own, keyed by inode number (struct seen), not in the inodes.  Pass 1
 * walks every directory entry: it counts, per inode, the entries that
 * name it (links) and flags entries naming nothing, second entries of a
 * directory, and wrong ".." inodes.  Pass 2 walks the tree from the root
 * and marks what it reaches (reached).  Pass 3 compares each inode with
 * what was counted.
 * Repairs are collected first and applied after the walks, since an
 * entry cannot be removed while its directory is being iterated.
 *
 * Unlinked inodes (link count 0) are normal after a crash (files open
 * but deleted at the time) and not errors: the next mount frees them.
 *
 * tfs_check_extents() is for the one kind of damage that stops loading
 * after the checksums passed: extents that overlap (the allocator refuses
 * the second claim on a block).  It loads the metadata again without the
 * allocator, sorts all extents by device block and sweeps them once,
 * remembering the extent reaching furthest so far: an extent that starts
 * before that end shares blocks with it.
 *
 * tfs_check_supers() reads the two superblock copies straight from the
 * device, before the file system is opened (which may rewrite one).
 *
 * Each check names the invariant of the crash protocol it verifies
 * (lib/journal.c, J1..J10): a committed state must satisfy them all, so
 * a finding is either damage or a bug in the protocol.  Loading itself
 * verifies J2 (every CRC), J8 (the superblock copy used) and J10 (each
 * checkpoint map inside the data area, clear of every file extent).
 */
#include "check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "alloc.h"
#include "format.h"
#include "fs_internal.h"
#include "io.h"
#include "journal.h"
#include "set.h"
#include "meta.h"

struct fix {
	uint64_t dir, ino;
	char *name; /* entry to remove */
};

/* What the walks saw of one inode. */
struct seen {
	uint64_t ino;	/* 0: free slot */
	uint32_t links; /* entries naming it */
	int reached;	/* from the root */
};

struct ctx {
	struct tfs_meta *m;
	struct seen *seen; /* open addressing, at most half full */
	size_t nseen;	   /* slots, a power of two */
	FILE *out;
	int flags;
	struct tfs_check_result *res;
	struct fix *fixes;
	size_t nfix, capfix;
	int nomem;
};

static void problem(struct ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->res->errors++;
	va_start(ap, fmt);
	fputs("tensorfs-fsck: ", c->out);
	vfprintf(c->out, fmt, ap);
	fputc('\n', c->out);
	va_end(ap);
}

static void add_fix(struct ctx *c, uint64_t dir, uint64_t ino, const char *name)
{
	if (c->nfix == c->capfix) {
		size_t n = c->capfix ? c->capfix * 2 : 16;
		struct fix *f = realloc(c->fixes, n * sizeof(*f));

		if (!f) {
			c->nomem = 1;
			return;
		}
		c->fixes = f;
		c->capfix = n;
	}
	c->fixes[c->nfix].dir = dir;
	c->fixes[c->nfix].ino = ino;
	c->fixes[c->nfix].name = strdup(name);
	if (!c->fixes[c->nfix].name) {
		c->nomem = 1;
		return;
	}
	c->nfix++;
}

/* The entry of ino in the table, added if absent. */
static struct seen *seen_of(struct ctx *c, uint64_t ino)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (c->nseen - 1);

	while (c->seen[i].ino && c->seen[i].ino != ino)
		i = (i + 1) & (c->nseen - 1);
	c->seen[i].ino = ino;
	return &c->seen[i];
}

static int add_seen(struct tfs_inode *ip, void *arg)
{
	seen_of(arg, ip->a.ino);
	return 0;
}

/* A table for every inode, with room for lost+found should a repair
 * make it. */
static int seen_init(struct ctx *c)
{
	uint64_t want = 2 * (tfs_meta_inodes(c->m) + 2);

	c->nseen = 64;
	while (c->nseen < want)
		c->nseen *= 2;
	c->seen = calloc(c->nseen, sizeof(*c->seen));
	if (!c->seen)
		return -ENOMEM;
	tfs_meta_each(c->m, add_seen, c);
	return 0;
}

/* Pass 1: entries. */
static int pass_entries(struct tfs_inode *dp, void *arg)
{
	struct ctx *c = arg;
	struct tfs_dirent *e = NULL;
	uint64_t cookie = 0;

	if (!dp->dir)
		return 0;
	while ((e = tfs_dir_next(dp, cookie))) {
		struct tfs_inode *ip = tfs_meta_get(c->m, e->ino);

		cookie = e->cookie;
		if (!ip) {
			/* J9a */
			problem(c,
				"entry '%s' in directory %llu names "
				"missing inode %llu",
				e->name, (unsigned long long)dp->a.ino,
				(unsigned long long)e->ino);
			add_fix(c, dp->a.ino, 0, e->name);
			continue;
		}
		if (ip->a.ino == TFS_ROOT_INO) {
			/* J9a */
			problem(c,
				"entry '%s' in directory %llu names the "
				"root directory",
				e->name, (unsigned long long)dp->a.ino);
			add_fix(c, dp->a.ino, 0, e->name);
			continue;
		}
		if (S_ISDIR(ip->a.mode) && seen_of(c, ip->a.ino)->links) {
			/* J9b */
			problem(c,
				"directory %llu has a second entry '%s' in "
				"directory %llu",
				(unsigned long long)ip->a.ino, e->name,
				(unsigned long long)dp->a.ino);
			add_fix(c, dp->a.ino, 0, e->name);
			continue;
		}
		seen_of(c, ip->a.ino)->links++;
		if (S_ISDIR(ip->a.mode) && ip->a.parent != dp->a.ino) {
			/* J9b */
			problem(c,
				"directory %llu: '..' is %llu, but it is "
				"in directory %llu",
				(unsigned long long)ip->a.ino,
				(unsigned long long)ip->a.parent,
				(unsigned long long)dp->a.ino);
			if (c->flags & TFS_CHECK_REPAIR) {
				ip->a.parent = dp->a.ino;
				c->res->repaired++;
			}
		}
	}
	return 0;
}

/* Pass 2: reachability from the root (iterative, the tree may be deep). */
static int pass_reach(struct ctx *c)
{
	uint64_t *stack = NULL;
	size_t n = 0, cap = 0;
	struct tfs_inode *root = tfs_meta_get(c->m, TFS_ROOT_INO);

	seen_of(c, root->a.ino)->reached = 1;
	stack = malloc(64 * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	cap = 64;
	stack[n++] = TFS_ROOT_INO;
	while (n) {
		struct tfs_inode *dp = tfs_meta_get(c->m, stack[--n]);
		struct tfs_dirent *e = NULL;
		uint64_t cookie = 0;

		if (!dp || !dp->dir)
			continue;
		while ((e = tfs_dir_next(dp, cookie))) {
			struct tfs_inode *ip = tfs_meta_get(c->m, e->ino);

			cookie = e->cookie;
			if (!ip || seen_of(c, ip->a.ino)->reached)
				continue;
			seen_of(c, ip->a.ino)->reached = 1;
			if (!ip->dir)
				continue;
			if (n == cap) {
				uint64_t *s =
				    realloc(stack, 2 * cap * sizeof(*s));

				if (!s) {
					free(stack);
					return -ENOMEM;
				}
				stack = s;
				cap *= 2;
			}
			stack[n++] = ip->a.ino;
		}
	}
	free(stack);
	return 0;
}

/* Is the entry name of dir one that pass 1 found bad (to be removed)? */
static int entry_to_remove(const struct ctx *c, uint64_t dir, const char *name)
{
	for (size_t i = 0; i < c->nfix; i++)
		if (c->fixes[i].dir == dir && !strcmp(c->fixes[i].name, name))
			return 1;
	return 0;
}

/* Subdirectories of dp that count for its link count: not the entries
 * that are a directory's second name or name the root. */
static uint64_t subdirs(struct ctx *c, struct tfs_inode *dp)
{
	struct tfs_dirent *e = NULL;
	uint64_t cookie = 0, n = 0;

	while ((e = tfs_dir_next(dp, cookie))) {
		struct tfs_inode *ip = tfs_meta_get(c->m, e->ino);

		cookie = e->cookie;
		if (ip && S_ISDIR(ip->a.mode) &&
		    !entry_to_remove(c, dp->a.ino, e->name))
			n++;
	}
	return n;
}

/* Pass 3: each inode against what was counted. */
static int pass_inodes(struct tfs_inode *ip, void *arg)
{
	struct ctx *c = arg;
	struct seen *sn = seen_of(c, ip->a.ino);
	uint64_t want;

	if (S_ISREG(ip->a.mode)) {
		c->res->files++;
		c->res->extents += tfs_extmap_count(&ip->map);
		if (tfs_extmap_check(&ip->map)) {
			/* J9e */
			problem(c, "inode %llu: extent map out of order",
				(unsigned long long)ip->a.ino);
		}
	} else if (S_ISDIR(ip->a.mode)) {
		c->res->dirs++;
	} else if (S_ISLNK(ip->a.mode)) {
		c->res->symlinks++;
		if (!ip->symlink) /* J9f */
			problem(c, "symlink %llu has no target",
				(unsigned long long)ip->a.ino);
	} else {
		c->res->others++;
	}
	if (ip->a.ino == TFS_ROOT_INO)
		return 0;
	if (ip->a.nlink == 0 && sn->links == 0) {
		c->res->orphans++;
		return 0;
	}
	if (!sn->reached) {
		/* J9d */
		problem(c, "inode %llu (%s) is not reachable from the root",
			(unsigned long long)ip->a.ino,
			S_ISDIR(ip->a.mode) ? "directory" : "file");
		if (c->flags & TFS_CHECK_REPAIR && !sn->links)
			add_fix(c, 0, ip->a.ino, "");
		return 0;
	}
	want = S_ISDIR(ip->a.mode) ? 2 + subdirs(c, ip) : sn->links;
	if (ip->a.nlink != want) {
		/* J9c */
		problem(c, "inode %llu: link count %u, should be %llu",
			(unsigned long long)ip->a.ino, ip->a.nlink,
			(unsigned long long)want);
		if (c->flags & TFS_CHECK_REPAIR) {
			ip->a.nlink = (uint32_t)want;
			c->res->repaired++;
		}
	}
	return 0;
}

static int root_links(struct ctx *c)
{
	struct tfs_inode *root = tfs_meta_get(c->m, TFS_ROOT_INO);
	uint64_t want = 2 + subdirs(c, root);

	if (root->a.nlink != want) {
		/* J9c */
		problem(c, "root directory: link count %u, should be %llu",
			root->a.nlink, (unsigned long long)want);
		if (c->flags & TFS_CHECK_REPAIR) {
			root->a.nlink = (uint32_t)want;
			c->res->repaired++;
		}
	}
	return 0;
}

/* Find or make /lost+found for unreachable inodes. */
static struct tfs_inode *lost_found(struct ctx *c)
{
	struct tfs_inode *root = tfs_meta_get(c->m, TFS_ROOT_INO), *lf;
	struct tfs_dirent *e = tfs_dir_lookup(root, "lost+found", 10);
	struct tfs_attr a = { 0 };

	if (e) {
		lf = tfs_meta_get(c->m, e->ino);
		return lf && lf->dir ? lf : NULL;
	}
	a.ino = tfs_meta_next_ino(c->m);
	a.mode = S_IFDIR | 0700;
	a.nlink = 2;
	a.parent = TFS_ROOT_INO;
	a.mtime.sec = a.ctime.sec = a.atime.sec = time(NULL);
	lf = tfs_meta_add(c->m, &a);
	if (!lf)
		return NULL;
	if (tfs_dir_add(c->m, root, "lost+found", 10, a.ino)) {
		tfs_meta_remove(c->m, lf);
		return NULL;
	}
	seen_of(c, lf->a.ino)->reached = 1;
	root->a.nlink++;
	return lf;
}

static void apply_fixes(struct ctx *c)
{
	for (size_t i = 0; i < c->nfix; i++) {
		struct fix *f = &c->fixes[i];

		if (f->dir) {
			struct tfs_inode *dp = tfs_meta_get(c->m, f->dir);

			if (dp &&
			    !tfs_dir_remove(c->m, dp, f->name, strlen(f->name)))
				c->res->repaired++;
		} else {
			struct tfs_inode *ip = tfs_meta_get(c->m, f->ino);
			struct tfs_inode *lf = lost_found(c);
			char name[32];
			int n = snprintf(name, sizeof(name), "#%llu",
					 (unsigned long long)f->ino);

			if (!ip || !lf ||
			    tfs_dir_add(c->m, lf, name, (size_t)n, f->ino))
				continue;
			if (S_ISDIR(ip->a.mode)) {
				ip->a.parent = lf->a.ino;
				ip->a.nlink = 2 + (uint32_t)subdirs(c, ip);
				lf->a.nlink++;
			} else {
				ip->a.nlink = 1;
			}
			c->res->repaired++;
		}
	}
}

/* ===== verbose listing ===== */

static void list_tree(struct ctx *c, struct tfs_inode *dp, char *path,
		      size_t len, int depth)
{
	struct tfs_dirent *e = NULL;
	uint64_t cookie = 0;

	if (depth > 4096)
		return;
	while ((e = tfs_dir_next(dp, cookie))) {
		struct tfs_inode *ip = tfs_meta_get(c->m, e->ino);
		size_t n = len + 1 + e->len;

		cookie = e->cookie;
		if (!ip || n >= 4096)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->name, e->len + 1u);
		if (S_ISREG(ip->a.mode))
			fprintf(c->out, "  %s  size %llu  extents %zu\n", path,
				(unsigned long long)ip->a.size,
				tfs_extmap_count(&ip->map));
		else if (ip->dir)
			list_tree(c, ip, path, n, depth + 1);
		path[len] = '\0';
	}
}

int tfs_check(struct tfs_fs *fs, int flags, FILE *out,
	      struct tfs_check_result *res)
{
	struct ctx c = { 0 };
	struct tfs_alloc *a = tfs_fs_alloc(fs);
	struct tfs_fs_info info;
	int rc;

	memset(res, 0, sizeof(*res));
	c.m = tfs_fs_meta(fs);
	c.out = out;
	c.flags = flags;
	c.res = res;
	rc = seen_init(&c);
	if (rc)
		goto out;
	tfs_meta_each(c.m, pass_entries, &c);
	rc = pass_reach(&c);
	if (rc)
		goto out;
	tfs_meta_each(c.m, pass_inodes, &c);
	root_links(&c);
	tfs_fs_get_info(fs, &info);
	if (tfs_alloc_check(a)) /* J6 */
		problem(&c, "free-space index is inconsistent");
	if (tfs_refs_check(tfs_meta_refs(c.m))) /* J12 */
		problem(&c, "shared-block table is inconsistent");
	if (fs->refs_wrong) {
		/* J12: load set them from the extents; a repair keeps it */
		problem(&c,
			"%llu shared-block counts disagreed with the extents "
			"mapping the blocks%s",
			(unsigned long long)fs->refs_wrong,
			flags & TFS_CHECK_REPAIR ? "; set to them" : "");
		if (flags & TFS_CHECK_REPAIR)
			res->repaired++;
	}
	/* J6, J10: info.free_blocks counts blocks freed but not yet
	 * committed (not yet back in the allocator) as free, as statfs
	 * does; the checkpoints' blocks are used */
	if (info.free_blocks + tfs_meta_used_blocks(c.m) + info.ckpt_blocks !=
	    info.data_blocks)
		problem(&c,
			"space does not add up: %llu used by files + "
			"%llu by checkpoints + %llu free != %llu data "
			"blocks",
			(unsigned long long)tfs_meta_used_blocks(c.m),
			(unsigned long long)info.ckpt_blocks,
			(unsigned long long)info.free_blocks,
			(unsigned long long)info.data_blocks);
	if (flags & TFS_CHECK_REPAIR) {
		apply_fixes(&c);
		if (res->repaired)
			tfs_fs_mark_changed(fs);
	}
	if (flags & TFS_CHECK_VERBOSE) {
		char path[4096] = "";

		fprintf(out, "files:\n");
		list_tree(&c, tfs_meta_get(c.m, TFS_ROOT_INO), path, 0, 0);
	}
	rc = c.nomem ? -ENOMEM : 0;
out:
	for (size_t i = 0; i < c.nfix; i++)
		free(c.fixes[i].name);
	free(c.fixes);
	free(c.seen);
	return rc;
}

/* ===== overlapping extents ===== */

#define CONFLICTS_SHOWN 1000

struct claim {
	uint64_t pblk, len, ino, lblk;
	int unlinked;
};

struct claims {
	struct claim *v;
	size_t n, cap;
};

static int collect(struct tfs_inode *ip, void *arg)
{
	struct claims *cl = arg;

	for (size_t i = 0; i < ip->map.n; i++) {
		const struct tfs_extent *e = &ip->map.ext[i];

		if (cl->n == cl->cap) {
			size_t n = cl->cap ? cl->cap * 2 : 256;
			struct claim *v = realloc(cl->v, n * sizeof(*v));

			if (!v)
				return -ENOMEM;
			cl->v = v;
			cl->cap = n;
		}
		cl->v[cl->n].pblk = e->pblk;
		cl->v[cl->n].len = e->len;
		cl->v[cl->n].ino = ip->a.ino;
		cl->v[cl->n].lblk = e->lblk;
		cl->v[cl->n].unlinked =
		    ip->a.nlink == 0 && ip->a.ino != TFS_ROOT_INO;
		cl->n++;
	}
	return 0;
}

static int by_pblk(const void *x, const void *y)
{
	const struct claim *a = x, *b = y;

	if (a->pblk != b->pblk)
		return a->pblk < b->pblk ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return a->lblk < b->lblk ? -1 : a->lblk > b->lblk;
}

static const char *unlinked(const struct claim *c)
{
	return c->unlinked ? " (unlinked)" : "";
}

static void conflict(FILE *out, uint64_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conflict(FILE *out, uint64_t *n, const char *fmt, ...)
{
	va_list ap;

	if (++*n > CONFLICTS_SHOWN)
		return;
	va_start(ap, fmt);
	fputs("tensorfs-fsck: ", out);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	va_end(ap);
}

/* "block 7" or "blocks 7..9", into buf */
static const char *blocks(char *buf, size_t len, uint64_t first, uint64_t last)
{
	if (first == last)
		snprintf(buf, len, "block %llu", (unsigned long long)first);
	else
		snprintf(buf, len, "blocks %llu..%llu",
			 (unsigned long long)first, (unsigned long long)last);
	return buf;
}

/* Whether every block of [start, start + len) is shared (J12). */
static int all_shared(const struct tfs_refs *refs, uint64_t start, uint64_t len)
{
	while (len) {
		uint64_t run;

		if (tfs_refs_get(refs, start, &run) < 2)
			return 0;
		if (run >= len)
			return 1;
		start += run;
		len -= run;
	}
	return 1;
}

static uint64_t sweep(const struct claims *cl, const struct tfs_super *sb,
		      const struct tfs_refs *refs, FILE *out)
{
	const struct claim *far = NULL;
	uint64_t far_end = 0, n = 0;
	char b1[48], b2[48], b3[48];

	for (size_t i = 0; i < cl->n; i++) {
		const struct claim *c = &cl->v[i];
		uint64_t c_end = c->pblk + c->len;

		if (c->len == 0 || c_end < c->pblk ||
		    !tfs_super_in_data(sb, c->pblk, c->len)) {
			uint32_t m = (uint32_t)(c->pblk >> TFS_MEMBER_BITS);
			uint64_t end = tfs_super_member_blocks(sb, m);
			char where[96];

			if (end)
				snprintf(where, sizeof(where),
					 "outside the data area (blocks "
					 "%llu..%llu of member %u)",
					 (unsigned long long)
					     tfs_super_data_start(sb, m),
					 (unsigned long long)(end - 1), m + 1);
			else
				snprintf(where, sizeof(where),
					 "on member %u of a set of %u", m + 1,
					 sb->nmembers);
			/* J9e */
			conflict(out, &n,
				 "inode %llu%s: file blocks %llu.. map %llu "
				 "device blocks from %llu, %s",
				 (unsigned long long)c->ino, unlinked(c),
				 (unsigned long long)c->lblk,
				 (unsigned long long)c->len,
				 (unsigned long long)c->pblk, where);
			continue;
		}
		if (far && c->pblk < far_end &&
		    !all_shared(refs, c->pblk,
				(c_end < far_end ? c_end : far_end) -
				    c->pblk)) {
			/* J6: no block has two owners, but those J12's
			 * counts share (load checks how many) */
			uint64_t last = (c_end < far_end ? c_end : far_end) - 1;

			blocks(b1, sizeof(b1), c->pblk, last);
			if (far->ino == c->ino)
				conflict(out, &n,
					 "inode %llu%s maps device "
					 "%s twice (at file blocks %llu.. and "
					 "%llu..)",
					 (unsigned long long)c->ino,
					 unlinked(c), b1,
					 (unsigned long long)far->lblk,
					 (unsigned long long)c->lblk);
			else
				conflict(
				    out, &n,
				    "inodes %llu%s and %llu%s "
				    "both map device %s (inode %llu: %s, "
				    "inode %llu: %s)",
				    (unsigned long long)far->ino, unlinked(far),
				    (unsigned long long)c->ino, unlinked(c), b1,
				    (unsigned long long)far->ino,
				    blocks(b2, sizeof(b2), far->pblk,
					   far_end - 1),
				    (unsigned long long)c->ino,
				    blocks(b3, sizeof(b3), c->pblk, c_end - 1));
		}
		if (!far || c_end > far_end) {
			far = c;
			far_end = c_end;
		}
	}
	if (n > CONFLICTS_SHOWN)
		fprintf(out,
			"tensorfs-fsck: ... and %llu more extent "
			"conflicts\n",
			(unsigned long long)(n - CONFLICTS_SHOWN));
	return n;
}

int tfs_check_extents(const char *path, FILE *out, char *err, size_t errlen)
{
	struct tfs_journal j;
	struct claims cl = { 0 };
	struct tfs_meta *m;
	struct tfs_dev *d;
	uint64_t n;
	int rc;

	memset(&j, 0, sizeof(j));
	if (err && errlen)
		err[0] = '\0';
	rc = tfs_set_open(path, TFS_DEV_RDONLY, &d, err, errlen);
	if (rc) {
		if (err && errlen && !err[0])
			snprintf(err, errlen, "cannot open it: %s",
				 strerror(-rc));
		return rc;
	}
	m = tfs_meta_new();
	if (!m) {
		tfs_dev_close(d);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = tfs_journal_load(&j, d, m, 0, err, errlen);
	if (rc)
		goto out;
	rc = tfs_meta_each(m, collect, &cl);
	if (rc) {
		snprintf(err, errlen, "out of memory listing the extents");
		goto out_journal;
	}
	qsort(cl.v, cl.n, sizeof(*cl.v), by_pblk);
	n = sweep(&cl, &j.sb, tfs_meta_refs(m), out);
	rc = n > INT32_MAX ? INT32_MAX : (int)n;
out_journal:
	tfs_journal_release(&j);
out:
	free(cl.v);
	tfs_meta_free(m);
	tfs_dev_close(d);
	return rc;
}

/* ===== superblocks ===== */

/*
 * Open the set path names read-only, without the lock, and read each
 * member's two superblock copies: bit i of *bad[m] (m < n) for each copy
 * i that does not decode as member m's.  The number of members into *n.
 */
static int read_copies(const char *path, int flags, unsigned int max,
		       unsigned int *n, int *bad)
{
	struct tfs_dev *d;
	struct tfs_super s;
	uint8_t *b;
	int rc;

	rc = tfs_set_open(path, TFS_DEV_RDONLY | TFS_DEV_NOLOCK | flags, &d,
			  NULL, 0);
	if (rc)
		return rc;
	b = tfs_io_alloc(2 * TFS_BLOCK_SIZE);
	rc = b ? 0 : -ENOMEM;
	*n = tfs_dev_members(d) < max ? tfs_dev_members(d) : max;
	for (unsigned int m = 0; m < *n && !rc; m++) {
		bad[m] = 0;
		rc = tfs_dev_read(d, b, 2 * TFS_BLOCK_SIZE, tfs_dev_off(m, 0));
		for (int i = 0; i < 2 && !rc; i++)
			if (tfs_super_decode(b + i * TFS_BLOCK_SIZE, &s) ||
			    s.member != m)
				bad[m] |= 1 << i;
	}
	tfs_io_free(b);
	tfs_dev_close(d);
	return rc;
}

int tfs_check_member_supers(const char *path, uint64_t *bad)
{
	int copies[TFS_SET_MAX];
	unsigned int n = 0;
	int rc;

	*bad = 0;
	rc = read_copies(path, TFS_SET_ADOPT, TFS_SET_MAX, &n, copies);
	for (unsigned int m = 1; m < n && !rc; m++)
		if (copies[m])
			*bad |= 1ull << m;
	return rc;
}

int tfs_check_supers(const char *path, int *bad)
{
	unsigned int n = 0;
	int rc;

	*bad = 0;
	rc = read_copies(path, 0, 1, &n, bad);
	if (rc)
		*bad = 0;
	return rc;
}
