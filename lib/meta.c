/*
 * meta.c: the in-memory tree: inode table, directories, xattrs, symlinks.
 *
 * The whole tree stays in RAM, so what one file costs bounds how many a
 * mount can hold: about 220 bytes here (TFS_META_BYTES_PER_FILE is the
 * stated bound, meta.h).  The structures are chosen for that:
 *
 * Pool: inodes and directory entries, the two objects every file has, are
 * carved from 64 KiB blocks in size classes of 8 bytes, each class with a
 * free list; no malloc header per object.  A freed object goes back to
 * its class for the next one of that size; blocks return to the system
 * only with the whole tree (tfs_meta_free()).  ASan builds poison free
 * objects so a use after free is still caught.
 *
 * Inode table: open addressing on the inode number with linear probing,
 * one pointer per slot, at most 3/4 full; removal leaves a tombstone, so
 * tfs_meta_each() may remove the inode it is called for.  Inode numbers
 * are never reused within a file system (the counter is 64 bits and
 * stored), so a stale number held by the kernel finds nothing rather than
 * another file.
 *
 * Directories: 'order' holds the entries in insertion order, one word
 * each: a pointer to a live entry, or (cookie << 1) | 1 where an entry was
 * removed.  Every new entry takes the next cookie of its directory, so
 * the array is sorted by cookie and readdir resumes with a binary search
 * after the last cookie it returned; the array is compacted when holes
 * outnumber entries.  Lookup by name goes through 'idx', open addressing
 * of 32-bit positions in 'order' (+1; 0 is empty), rebuilt whenever the
 * array is compacted.  A rename within the directory keeps the entry's
 * cookie (tfs_dir_rename()), so a readdir that runs while entries are
 * renamed in place ends, and returns no entry twice.  Cookies are not
 * stored: a mount assigns them afresh.
 *
 * Accounting: 'bytes' is what tfs_meta_write_records() would produce,
 * kept exact by every mutator here, so the file system can refuse a
 * change (ENOSPC) that a checkpoint slot could not hold.  'ram' is the
 * memory the tree holds: every malloc block at its chunk size (usable
 * size plus glibc's header word), kept exact by the same mutators.
 */
#include "meta.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__SANITIZE_ADDRESS__)
#define META_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define META_ASAN 1
#endif
#endif
#ifdef META_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ===== the pool ===== */

#define POOL_BLOCK   (64u << 10)
#define POOL_GRAIN   8u
#define POOL_MAX     512u /* an entry of the longest name fits */
#define POOL_CLASSES (POOL_MAX / POOL_GRAIN)

struct pool_block {
	struct pool_block *next;
	uint64_t pad; /* objects start 16-aligned */
};

struct pool {
	void *free[POOL_CLASSES]; /* per class, linked through word 0 */
	struct pool_block *blocks;
	char *cur; /* bump space of the newest block */
	size_t left;
};

struct tfs_dir {
	uint32_t *idx;	       /* position in order + 1; 0 empty, TOMB */
	uintptr_t *order;      /* entry, or (cookie << 1) | 1: removed */
	uint32_t icap, itombs; /* idx slots (a power of 2), tombstones */
	uint32_t olen, ocap, holes, count;
	uint64_t next_cookie;
};

struct tfs_meta {
	struct tfs_inode **tab; /* NULL empty, TOMB_INODE removed */
	size_t cap, tombs;	/* slots (a power of 2), tombstones */
	uint64_t ninodes;
	uint64_t next_ino;
	uint64_t used_blocks; /* what the extents add up to */
	struct tfs_refs refs; /* blocks several extents map */
	uint64_t bytes;
	uint64_t ram;
	struct pool pool;
#ifdef TFS_TEST_HOOKS
	int fail_allocs; /* tfs_meta_fail_allocs() */
#endif
};

#ifdef TFS_TEST_HOOKS
#define ALLOC_FAILS(m) ((m)->fail_allocs)
#else
#define ALLOC_FAILS(m) 0
#endif

/* The first readdir cookies are "." and "..". */
#define FIRST_COOKIE  3
#define TOMB_IDX      UINT32_MAX
#define MIN_TABLE     1024u
#define MIN_DIR_TABLE 8u

static char tomb_inode;
#define TOMB_INODE ((struct tfs_inode *)(void *)&tomb_inode)

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return hash64(h);
}

/* What a malloc block costs: its usable size and glibc's size word. */
static uint64_t chunk(const void *p)
{
	return p ? malloc_usable_size((void *)p) + sizeof(size_t) : 0;
}

static void *ram_calloc(struct tfs_meta *m, size_t n, size_t size)
{
	void *p = ALLOC_FAILS(m) ? NULL : calloc(n, size);

	m->ram += chunk(p);
	return p;
}

static void ram_free(struct tfs_meta *m, void *p)
{
	m->ram -= chunk(p);
	free(p);
}

/* realloc that keeps 'ram': NULL (and *pp unchanged) on failure */
static void *ram_realloc(struct tfs_meta *m, void *pp, size_t size)
{
	uint64_t before = chunk(pp);
	void *p = ALLOC_FAILS(m) ? NULL : realloc(pp, size);

	if (!p)
		return NULL;
	m->ram += chunk(p) - before;
	return p;
}

static size_t pool_class(size_t size)
{
	return (size + POOL_GRAIN - 1) / POOL_GRAIN - 1;
}

/* A zeroed object of 'size' bytes (<= POOL_MAX), or NULL. */
static void *pool_alloc(struct tfs_meta *m, size_t size)
{
	struct pool *pl = &m->pool;
	size_t c = pool_class(size), n = (c + 1) * POOL_GRAIN;
	void *p = pl->free[c];

	if (p) {
		UNPOISON(p, n);
		pl->free[c] = *(void **)p;
	} else {
		if (pl->left < n) {
			struct pool_block *b =
			    ALLOC_FAILS(m) ? NULL : malloc(POOL_BLOCK);

			if (!b)
				return NULL;
			m->ram += chunk(b);
			b->next = pl->blocks;
			pl->blocks = b;
			pl->cur = (char *)(b + 1);
			pl->left = POOL_BLOCK - sizeof(*b);
			POISON(pl->cur, pl->left);
		}
		p = pl->cur;
		pl->cur += n;
		pl->left -= n;
		UNPOISON(p, n);
	}
	memset(p, 0, n);
	return p;
}

static void pool_free(struct tfs_meta *m, void *p, size_t size)
{
	struct pool *pl = &m->pool;
	size_t c = pool_class(size);

	if (!p)
		return;
	*(void **)p = pl->free[c];
	pl->free[c] = p;
	POISON(p, (c + 1) * POOL_GRAIN);
}

static void pool_release(struct tfs_meta *m)
{
	struct pool_block *b, *next;

	for (b = m->pool.blocks; b; b = next) {
		UNPOISON(b, POOL_BLOCK);
		next = b->next;
		ram_free(m, b);
	}
	memset(&m->pool, 0, sizeof(m->pool));
}

static size_t dirent_size(size_t len)
{
	return sizeof(struct tfs_dirent) + len + 1;
}

/* ===== life cycle ===== */

struct tfs_meta *tfs_meta_new(void)
{
	struct tfs_meta *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ram = chunk(m);
	m->cap = MIN_TABLE;
	m->tab = ram_calloc(m, m->cap, sizeof(*m->tab));
	if (!m->tab) {
		free(m);
		return NULL;
	}
	m->next_ino = TFS_ROOT_INO + 1;
	m->bytes = TFS_HDR_SIZE;
	return m;
}

static void dir_free(struct tfs_meta *m, struct tfs_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->olen; i++)
		if (!(d->order[i] & 1)) {
			struct tfs_dirent *e = (struct tfs_dirent *)d->order[i];

			pool_free(m, e, dirent_size(e->len));
		}
	ram_free(m, d->order);
	ram_free(m, d->idx);
	pool_free(m, d, sizeof(*d));
}

static void inode_free(struct tfs_meta *m, struct tfs_inode *ip)
{
	m->ram -= chunk(ip->map.ext);
	tfs_extmap_release(&ip->map);
	dir_free(m, ip->dir);
	ram_free(m, ip->symlink);
	for (size_t i = 0; i < ip->nxattrs; i++) {
		ram_free(m, ip->xattrs[i].name);
		ram_free(m, ip->xattrs[i].value);
	}
	ram_free(m, ip->xattrs);
	pool_free(m, ip, sizeof(*ip));
}

void tfs_meta_free(struct tfs_meta *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		if (m->tab[i] && m->tab[i] != TOMB_INODE)
			inode_free(m, m->tab[i]);
	pool_release(m);
	tfs_refs_release(&m->refs);
	free(m->tab);
	free(m);
}

uint64_t tfs_meta_next_ino(const struct tfs_meta *m)
{
	return m->next_ino;
}

void tfs_meta_set_next_ino(struct tfs_meta *m, uint64_t next)
{
	m->next_ino = next;
}

uint64_t tfs_meta_inodes(const struct tfs_meta *m)
{
	return m->ninodes;
}

uint64_t tfs_meta_used_blocks(const struct tfs_meta *m)
{
	return m->used_blocks - tfs_refs_extra(&m->refs);
}

uint64_t tfs_meta_bytes(const struct tfs_meta *m)
{
	return m->bytes + tfs_refs_count(&m->refs) * TFS_REC_SIZE_REFCOUNT;
}

uint64_t tfs_meta_ram(const struct tfs_meta *m)
{
	return m->ram + tfs_refs_ram(&m->refs);
}

struct tfs_refs *tfs_meta_refs(struct tfs_meta *m)
{
	return &m->refs;
}

/* ===== inode table ===== */

/* The slot holding ino, or the free one (NULL) that ends its probe. */
static size_t table_find(const struct tfs_meta *m, uint64_t ino)
{
	size_t mask = m->cap - 1, i = hash64(ino) & mask;

	while (m->tab[i] &&
	       (m->tab[i] == TOMB_INODE || m->tab[i]->a.ino != ino))
		i = (i + 1) & mask;
	return i;
}

struct tfs_inode *tfs_meta_get(const struct tfs_meta *m, uint64_t ino)
{
	return m->tab[table_find(m, ino)];
}

/* Rehash into n slots (dropping tombstones): 0 or -ENOMEM, unchanged. */
static int table_resize(struct tfs_meta *m, size_t n)
{
	struct tfs_inode **old = m->tab;
	size_t ocap = m->cap;

	m->tab = ram_calloc(m, n, sizeof(*m->tab));
	if (!m->tab) {
		m->tab = old;
		return -ENOMEM;
	}
	m->cap = n;
	m->tombs = 0;
	for (size_t i = 0; i < ocap; i++)
		if (old[i] && old[i] != TOMB_INODE)
			m->tab[table_find(m, old[i]->a.ino)] = old[i];
	ram_free(m, old);
	return 0;
}

struct tfs_inode *tfs_meta_add(struct tfs_meta *m, const struct tfs_attr *a)
{
	struct tfs_inode *ip;
	size_t i, mask;

	if (a->ino == 0 || tfs_meta_get(m, a->ino))
		return NULL;
	if ((m->ninodes + m->tombs + 1) * 4 > m->cap * 3) {
		size_t n = m->cap;

		while ((m->ninodes + 1) * 2 > n)
			n *= 2;
		if (table_resize(m, n))
			return NULL;
	}
	ip = pool_alloc(m, sizeof(*ip));
	if (!ip)
		return NULL;
	ip->a = *a;
	if (S_ISDIR(a->mode)) {
		struct tfs_dir *d = pool_alloc(m, sizeof(*d));

		if (d) {
			d->icap = MIN_DIR_TABLE;
			d->idx = ram_calloc(m, d->icap, sizeof(*d->idx));
			d->next_cookie = FIRST_COOKIE;
		}
		if (!d || !d->idx) {
			pool_free(m, d, sizeof(*d));
			pool_free(m, ip, sizeof(*ip));
			return NULL;
		}
		ip->dir = d;
	}
	/* the first free or removed slot on the probe path */
	mask = m->cap - 1;
	i = hash64(a->ino) & mask;
	while (m->tab[i] && m->tab[i] != TOMB_INODE)
		i = (i + 1) & mask;
	if (m->tab[i] == TOMB_INODE)
		m->tombs--;
	m->tab[i] = ip;
	m->ninodes++;
	m->bytes += TFS_REC_SIZE_INODE;
	if (a->ino >= m->next_ino)
		m->next_ino = a->ino + 1;
	return ip;
}

void tfs_meta_remove(struct tfs_meta *m, struct tfs_inode *ip)
{
	size_t i = table_find(m, ip->a.ino);

	if (m->tab[i] != ip)
		return;
	m->tab[i] = TOMB_INODE;
	m->tombs++;
	m->ninodes--;
	m->bytes -= TFS_REC_SIZE_INODE;
	m->bytes -= tfs_extmap_count(&ip->map) * TFS_REC_SIZE_EXTENT;
	m->used_blocks -= tfs_extmap_blocks(&ip->map);
	if (ip->symlink)
		m->bytes -= tfs_rec_size_symlink(strlen(ip->symlink));
	for (size_t k = 0; k < ip->nxattrs; k++)
		m->bytes -=
		    tfs_rec_size_xattr(ip->xattrs[k].nlen, ip->xattrs[k].vlen);
	if (ip->dir)
		for (size_t k = 0; k < ip->dir->olen; k++)
			if (!(ip->dir->order[k] & 1))
				m->bytes -= tfs_rec_size_link(
				    ((struct tfs_dirent *)ip->dir->order[k])
					->len);
	inode_free(m, ip);
}

int tfs_meta_each(struct tfs_meta *m,
		  int (*fn)(struct tfs_inode *ip, void *arg), void *arg)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct tfs_inode *ip = m->tab[i];
		int rc;

		if (!ip || ip == TOMB_INODE)
			continue;
		rc = fn(ip, arg);
		if (rc)
			return rc;
	}
	return 0;
}

/* ===== directories ===== */

static struct tfs_dirent *slot_entry(uintptr_t v)
{
	return v & 1 ? NULL : (struct tfs_dirent *)v;
}

static uint64_t slot_cookie(uintptr_t v)
{
	return v & 1 ? v >> 1 : ((struct tfs_dirent *)v)->cookie;
}

/* The idx slot of name, or the empty one ending its probe. */
static size_t dir_find(const struct tfs_dir *d, const char *name, size_t len)
{
	size_t mask = d->icap - 1, i = hash_name(name, len) & mask;

	for (; d->idx[i]; i = (i + 1) & mask) {
		struct tfs_dirent *e;

		if (d->idx[i] == TOMB_IDX)
			continue;
		e = (struct tfs_dirent *)d->order[d->idx[i] - 1];
		if (e->len == len && !memcmp(e->name, name, len))
			break;
	}
	return i;
}

struct tfs_dirent *tfs_dir_lookup(const struct tfs_inode *dir, const char *name,
				  size_t len)
{
	const struct tfs_dir *d = dir->dir;
	size_t i;

	if (!d)
		return NULL;
	i = dir_find(d, name, len);
	return d->idx[i] ? (struct tfs_dirent *)d->order[d->idx[i] - 1] : NULL;
}

/* Fill a zeroed idx of n slots from order, and make it d's. */
static void dir_fill_idx(struct tfs_meta *m, struct tfs_dir *d, uint32_t *idx,
			 uint32_t n)
{
	size_t mask = n - 1;

	for (uint32_t k = 0; k < d->olen; k++) {
		struct tfs_dirent *e = slot_entry(d->order[k]);
		size_t i;

		if (!e)
			continue;
		i = hash_name(e->name, e->len) & mask;
		while (idx[i])
			i = (i + 1) & mask;
		idx[i] = k + 1;
	}
	ram_free(m, d->idx);
	d->idx = idx;
	d->icap = n;
	d->itombs = 0;
}

/* Rebuild idx with n slots: 0 or -ENOMEM, d unchanged. */
static int dir_reindex(struct tfs_meta *m, struct tfs_dir *d, uint32_t n)
{
	uint32_t *idx = ram_calloc(m, n, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	dir_fill_idx(m, d, idx, n);
	return 0;
}

/* Drop the holes from order and rebuild idx at its size: 0 or -ENOMEM,
 * d unchanged. */
static int dir_compact(struct tfs_meta *m, struct tfs_dir *d)
{
	uint32_t *idx = ram_calloc(m, d->icap, sizeof(*idx));
	uint32_t j = 0;

	if (!idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->olen; i++)
		if (!(d->order[i] & 1))
			d->order[j++] = d->order[i];
	d->olen = j;
	d->holes = 0;
	dir_fill_idx(m, d, idx, d->icap);
	return 0;
}

int tfs_dir_add(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		size_t len, uint64_t ino)
{
	struct tfs_dir *d = dir->dir;
	struct tfs_dirent *e;
	size_t i, mask;

	if (!d)
		return -ENOTDIR;
	if (tfs_dir_lookup(dir, name, len))
		return -EEXIST;
	if (len > TFS_NAME_MAX || dirent_size(len) > POOL_MAX)
		return -ENAMETOOLONG;
	if (d->olen >= UINT32_MAX - 1 && (!d->holes || dir_compact(m, d)))
		return -ENOSPC; /* 4 billion entries in one directory */
	if (d->olen == d->ocap) {
		uint32_t nc = d->ocap ? d->ocap * 2 : 8;
		uintptr_t *no;

		if (nc < d->ocap)
			nc = UINT32_MAX;
		no = ram_realloc(m, d->order, (size_t)nc * sizeof(*no));
		if (!no)
			return -ENOMEM;
		d->order = no;
		d->ocap = nc;
	}
	if (((uint64_t)d->count + d->itombs + 1) * 4 > (uint64_t)d->icap * 3) {
		uint64_t n = d->icap;

		while (((uint64_t)d->count + 1) * 2 > n)
			n *= 2;
		if (n > UINT32_MAX / 2 + 1 || dir_reindex(m, d, (uint32_t)n))
			return -ENOMEM;
	}
	e = pool_alloc(m, dirent_size(len));
	if (!e)
		return -ENOMEM;
	e->ino = ino;
	e->cookie = d->next_cookie++;
	e->len = len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	mask = d->icap - 1;
	i = hash_name(name, len) & mask;
	while (d->idx[i] && d->idx[i] != TOMB_IDX)
		i = (i + 1) & mask;
	if (d->idx[i] == TOMB_IDX)
		d->itombs--;
	d->order[d->olen] = (uintptr_t)e;
	d->idx[i] = ++d->olen;
	d->count++;
	m->bytes += tfs_rec_size_link(len);
	return 0;
}

int tfs_dir_rename(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		   size_t len, const char *newname, size_t newlen)
{
	struct tfs_dir *d = dir->dir;
	struct tfs_dirent *e, *ne;
	size_t i, j, mask;
	uint32_t k;

	if (!d)
		return -ENOTDIR;
	if (tfs_dir_lookup(dir, newname, newlen))
		return -EEXIST;
	if (newlen > TFS_NAME_MAX || dirent_size(newlen) > POOL_MAX)
		return -ENAMETOOLONG;
	if (!tfs_dir_lookup(dir, name, len))
		return -ENOENT;
	/* the old name's slot becomes a tombstone: room for it first */
	if (((uint64_t)d->count + d->itombs + 1) * 4 > (uint64_t)d->icap * 3 &&
	    dir_reindex(m, d, d->icap))
		return -ENOMEM;
	ne = pool_alloc(m, dirent_size(newlen));
	if (!ne)
		return -ENOMEM;
	i = dir_find(d, name, len);
	k = d->idx[i] - 1;
	e = (struct tfs_dirent *)d->order[k];
	ne->ino = e->ino;
	ne->cookie = e->cookie; /* same place in the readdir order */
	ne->len = newlen;
	memcpy(ne->name, newname, newlen);
	ne->name[newlen] = '\0';
	d->idx[i] = TOMB_IDX;
	d->itombs++;
	d->order[k] = (uintptr_t)ne;
	mask = d->icap - 1;
	j = hash_name(newname, newlen) & mask;
	while (d->idx[j] && d->idx[j] != TOMB_IDX)
		j = (j + 1) & mask;
	if (d->idx[j] == TOMB_IDX)
		d->itombs--;
	d->idx[j] = k + 1;
	m->bytes += tfs_rec_size_link(newlen);
	m->bytes -= tfs_rec_size_link(len);
	pool_free(m, e, dirent_size(len));
	return 0;
}

/* Index of the first slot with cookie > after. */
static size_t slot_after(const struct tfs_dir *d, uint64_t after)
{
	size_t lo = 0, hi = d->olen;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slot_cookie(d->order[mid]) <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int tfs_dir_remove(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		   size_t len)
{
	struct tfs_dir *d = dir->dir;
	struct tfs_dirent *e;
	size_t i;
	uint32_t k;

	if (!d)
		return -ENOTDIR;
	i = dir_find(d, name, len);
	if (!d->idx[i])
		return -ENOENT;
	k = d->idx[i] - 1;
	e = (struct tfs_dirent *)d->order[k];
	d->idx[i] = TOMB_IDX;
	d->itombs++;
	d->order[k] = ((uintptr_t)e->cookie << 1) | 1;
	d->holes++;
	d->count--;
	m->bytes -= tfs_rec_size_link(len);
	pool_free(m, e, dirent_size(len));
	/* a failed compaction keeps the holes: only slower */
	if (d->holes > 64 && d->holes > d->olen / 2)
		dir_compact(m, d);
	return 0;
}

uint64_t tfs_dir_count(const struct tfs_inode *dir)
{
	return dir->dir ? dir->dir->count : 0;
}

struct tfs_dirent *tfs_dir_next(const struct tfs_inode *dir, uint64_t after)
{
	const struct tfs_dir *d = dir->dir;

	if (!d)
		return NULL;
	for (size_t i = slot_after(d, after); i < d->olen; i++)
		if (!(d->order[i] & 1))
			return (struct tfs_dirent *)d->order[i];
	return NULL;
}

/* ===== extents ===== */

int tfs_meta_map(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		 uint64_t pblk, uint64_t len, uint32_t flags,
		 void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		 void *arg)
{
	size_t n0 = tfs_extmap_count(&ip->map);
	uint64_t b0 = tfs_extmap_blocks(&ip->map), r0 = chunk(ip->map.ext);
	int rc = tfs_extmap_set(&ip->map, lblk, pblk, len, flags, freed, arg);

	if (rc)
		return rc;
	m->bytes += (tfs_extmap_count(&ip->map) - n0) * TFS_REC_SIZE_EXTENT;
	m->used_blocks += tfs_extmap_blocks(&ip->map) - b0;
	m->ram += chunk(ip->map.ext) - r0;
	return 0;
}

int tfs_meta_unmap(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		   uint64_t len,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg)
{
	size_t n0 = tfs_extmap_count(&ip->map);
	uint64_t b0 = tfs_extmap_blocks(&ip->map), r0 = chunk(ip->map.ext);
	int rc = tfs_extmap_punch(&ip->map, lblk, len, freed, arg);

	if (rc)
		return rc;
	/* unsigned wrap-around makes these subtractions of a decrease */
	m->bytes += (tfs_extmap_count(&ip->map) - n0) * TFS_REC_SIZE_EXTENT;
	m->used_blocks += tfs_extmap_blocks(&ip->map) - b0;
	m->ram += chunk(ip->map.ext) - r0;
	return 0;
}

/* ===== xattrs and symlinks ===== */

struct tfs_xattr *tfs_xattr_find(const struct tfs_inode *ip, const char *name)
{
	for (size_t i = 0; i < ip->nxattrs; i++)
		if (!strcmp(ip->xattrs[i].name, name))
			return &ip->xattrs[i];
	return NULL;
}

static struct tfs_xattr *xattr_findn(const struct tfs_inode *ip,
				     const char *name, size_t nlen)
{
	for (size_t i = 0; i < ip->nxattrs; i++)
		if (ip->xattrs[i].nlen == nlen &&
		    !memcmp(ip->xattrs[i].name, name, nlen))
			return &ip->xattrs[i];
	return NULL;
}

/* A NUL-terminated copy of s[0..n), counted in 'ram' (or NULL). */
static char *ram_strndup(struct tfs_meta *m, const char *s, size_t n)
{
	char *t = strndup(s, n);

	m->ram += chunk(t);
	return t;
}

int tfs_xattr_set(struct tfs_meta *m, struct tfs_inode *ip, const char *name,
		  size_t nlen, const void *val, size_t vlen)
{
	struct tfs_xattr *x = xattr_findn(ip, name, nlen);
	void *v = malloc(vlen ? vlen : 1);

	if (!v)
		return -ENOMEM;
	m->ram += chunk(v);
	if (vlen)
		memcpy(v, val, vlen);
	if (x) {
		m->bytes -= tfs_rec_size_xattr(x->nlen, x->vlen);
		ram_free(m, x->value);
		x->value = v;
		x->vlen = vlen;
		m->bytes += tfs_rec_size_xattr(nlen, vlen);
		return 0;
	}
	x = ram_realloc(m, ip->xattrs, (ip->nxattrs + 1) * sizeof(*x));
	if (!x) {
		ram_free(m, v);
		return -ENOMEM;
	}
	ip->xattrs = x;
	x = &ip->xattrs[ip->nxattrs];
	x->name = ram_strndup(m, name, nlen);
	if (!x->name) {
		ram_free(m, v);
		return -ENOMEM;
	}
	x->nlen = nlen;
	x->value = v;
	x->vlen = vlen;
	ip->nxattrs++;
	m->bytes += tfs_rec_size_xattr(nlen, vlen);
	return 0;
}

int tfs_xattr_del(struct tfs_meta *m, struct tfs_inode *ip, const char *name,
		  size_t nlen)
{
	struct tfs_xattr *x = xattr_findn(ip, name, nlen);

	if (!x)
		return -ENODATA;
	m->bytes -= tfs_rec_size_xattr(x->nlen, x->vlen);
	ram_free(m, x->name);
	ram_free(m, x->value);
	*x = ip->xattrs[--ip->nxattrs];
	return 0;
}

int tfs_meta_set_symlink(struct tfs_meta *m, struct tfs_inode *ip,
			 const char *target, size_t len)
{
	char *t = ram_strndup(m, target, len);

	if (!t)
		return -ENOMEM;
	if (ip->symlink)
		m->bytes -= tfs_rec_size_symlink(strlen(ip->symlink));
	ram_free(m, ip->symlink);
	ip->symlink = t;
	m->bytes += tfs_rec_size_symlink(len);
	return 0;
}

/* ===== records ===== */

int tfs_meta_apply(struct tfs_meta *m, const struct tfs_rec *r,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg)
{
	struct tfs_inode *ip, *child;
	char name[TFS_XATTR_NAME_MAX + 1];

	if (r->type == TFS_REC_REFCOUNT) {
		int rc = tfs_refs_set(&m->refs, r->pblk, r->len, r->flags);

		return rc == -ENOMEM ? rc : rc ? -EUCLEAN : 0;
	}
	if (r->type == TFS_REC_INODE) {
		ip = tfs_meta_get(m, r->attr.ino);
		if (!ip)
			return tfs_meta_add(m, &r->attr) ? 0 : -ENOMEM;
		if ((ip->a.mode & S_IFMT) != (r->attr.mode & S_IFMT))
			return -EUCLEAN;
		ip->a = r->attr;
		return 0;
	}
	ip = tfs_meta_get(m, r->ino);
	if (!ip)
		return -EUCLEAN;
	switch (r->type) {
	case TFS_REC_FREE:
		if (ip->a.ino == TFS_ROOT_INO || tfs_dir_count(ip))
			return -EUCLEAN;
		if (freed)
			for (size_t i = 0; i < ip->map.n; i++)
				freed(ip->map.ext[i].pblk, ip->map.ext[i].len,
				      arg);
		tfs_meta_remove(m, ip);
		return 0;
	case TFS_REC_LINK:
		child = tfs_meta_get(m, r->child);
		if (!ip->dir || !child || child->a.ino == TFS_ROOT_INO)
			return -EUCLEAN;
		switch (tfs_dir_add(m, ip, r->name, r->name_len, r->child)) {
		case 0:
			return 0;
		case -ENOMEM:
			return -ENOMEM;
		default:
			return -EUCLEAN;
		}
	case TFS_REC_UNLINK:
		return tfs_dir_remove(m, ip, r->name, r->name_len) ? -EUCLEAN
								   : 0;
	case TFS_REC_EXTENT:
		if (!S_ISREG(ip->a.mode) || r->lblk + r->len < r->lblk)
			return -EUCLEAN;
		return tfs_meta_map(m, ip, r->lblk, r->pblk, r->len, r->flags,
				    freed, arg);
	case TFS_REC_PUNCH:
		if (!S_ISREG(ip->a.mode))
			return -EUCLEAN;
		return tfs_meta_unmap(m, ip, r->lblk, r->len, freed, arg);
	case TFS_REC_XATTR:
		return tfs_xattr_set(m, ip, r->name, r->name_len, r->value,
				     r->value_len);
	case TFS_REC_XATTR_DEL:
		memcpy(name, r->name, r->name_len);
		return tfs_xattr_del(m, ip, name, r->name_len) ? -EUCLEAN : 0;
	case TFS_REC_SYMLINK:
		if (!S_ISLNK(ip->a.mode))
			return -EUCLEAN;
		return tfs_meta_set_symlink(m, ip, r->name, r->name_len);
	}
	return -EUCLEAN;
}

struct wr {
	struct tfs_buf *b;
	size_t chunk;
	int (*flush)(struct tfs_buf *b, void *arg);
	void *arg;
	uint64_t nrec;
	int pass;
};

static int wr_maybe_flush(struct wr *w, int rc)
{
	w->nrec++;
	if (rc)
		return rc;
	if (w->b->len >= w->chunk)
		return w->flush(w->b, w->arg);
	return 0;
}

static int wr_inode(struct tfs_inode *ip, void *arg)
{
	struct wr *w = arg;
	int rc;

	if (w->pass == 1) {
		struct tfs_dirent *e = NULL;
		uint64_t c = 0;

		if (!ip->dir)
			return 0;
		while ((e = tfs_dir_next(ip, c))) {
			c = e->cookie;
			rc = wr_maybe_flush(w, tfs_rec_put_link(w->b, ip->a.ino,
								e->ino, e->name,
								e->len));
			if (rc)
				return rc;
		}
		return 0;
	}
	rc = wr_maybe_flush(w, tfs_rec_put_inode(w->b, &ip->a));
	if (rc)
		return rc;
	if (ip->symlink) {
		rc = wr_maybe_flush(
		    w, tfs_rec_put_symlink(w->b, ip->a.ino, ip->symlink,
					   strlen(ip->symlink)));
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < ip->nxattrs; i++) {
		struct tfs_xattr *x = &ip->xattrs[i];

		rc = wr_maybe_flush(w, tfs_rec_put_xattr(w->b, ip->a.ino,
							 x->name, x->nlen,
							 x->value, x->vlen));
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < ip->map.n; i++) {
		struct tfs_extent *e = &ip->map.ext[i];

		rc = wr_maybe_flush(w, tfs_rec_put_extent(w->b, ip->a.ino,
							  e->lblk, e->pblk,
							  e->len, e->flags));
		if (rc)
			return rc;
	}
	return 0;
}

static int wr_ref(uint64_t start, uint64_t len, uint32_t count, void *arg)
{
	struct wr *w = arg;

	return wr_maybe_flush(w, tfs_rec_put_refcount(w->b, start, len, count));
}

int tfs_meta_write_records(struct tfs_meta *m, struct tfs_buf *b, size_t chunk,
			   int (*flush)(struct tfs_buf *b, void *arg),
			   void *arg, uint64_t *nrec)
{
	struct wr w = { b, chunk, flush, arg, 0, 0 };
	int rc;

	rc = tfs_meta_each(m, wr_inode, &w);
	if (!rc) {
		w.pass = 1;
		rc = tfs_meta_each(m, wr_inode, &w);
	}
	if (!rc)
		rc = tfs_refs_walk(&m->refs, wr_ref, &w);
	*nrec = w.nrec;
	return rc;
}

#ifdef TFS_TEST_HOOKS
void tfs_meta_fail_allocs(struct tfs_meta *m, int on)
{
	m->fail_allocs = on;
}
#endif
