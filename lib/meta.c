/*
 * meta.c: the in-memory tree: inode table, directories, xattrs, symlinks.
 *
 * Inode table: a chained hash on the inode number, doubled when its load
 * passes 1.  Inode numbers are never reused within a file system (the
 * counter is 64 bits and stored), so a stale number held by the kernel
 * finds nothing rather than another file.
 *
 * Directories: a chained hash on the name for lookup, plus an array of
 * (cookie, entry) in insertion order for readdir.  Every new entry takes
 * the next cookie of its directory, so the array is sorted by cookie and
 * readdir resumes with a binary search after the last cookie it returned;
 * removal leaves a hole (entry NULL, cookie kept) and the array is
 * compacted when holes outnumber entries.  Cookies are not stored: a
 * mount assigns them afresh.
 *
 * Accounting: 'bytes' is what tfs_meta_write_records() would produce,
 * kept exact by every mutator here, so the file system can refuse a
 * change (ENOSPC) that a checkpoint slot could not hold.
 */
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dslot {
	uint64_t cookie;
	struct tfs_dirent *d;	/* NULL: removed */
};

struct tfs_dir {
	struct tfs_dirent **hash;
	size_t nhash;
	uint64_t count;
	struct dslot *order;
	size_t olen, ocap, holes;
	uint64_t next_cookie;
};

struct tfs_meta {
	struct tfs_inode **hash;
	size_t nhash;
	uint64_t ninodes;
	uint64_t next_ino;
	uint64_t used_blocks;
	uint64_t bytes;
};

/* The first readdir cookies are "." and "..". */
#define FIRST_COOKIE 3

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
	return h;
}

struct tfs_meta *tfs_meta_new(void)
{
	struct tfs_meta *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nhash = 1024;
	m->hash = calloc(m->nhash, sizeof(*m->hash));
	if (!m->hash) {
		free(m);
		return NULL;
	}
	m->next_ino = TFS_ROOT_INO + 1;
	m->bytes = TFS_HDR_SIZE;
	return m;
}

static void dir_free(struct tfs_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->olen; i++)
		free(d->order[i].d);
	free(d->order);
	free(d->hash);
	free(d);
}

static void inode_free(struct tfs_inode *ip)
{
	tfs_extmap_release(&ip->map);
	dir_free(ip->dir);
	free(ip->symlink);
	for (size_t i = 0; i < ip->nxattrs; i++) {
		free(ip->xattrs[i].name);
		free(ip->xattrs[i].value);
	}
	free(ip->xattrs);
	free(ip);
}

void tfs_meta_free(struct tfs_meta *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nhash; i++) {
		struct tfs_inode *ip = m->hash[i], *next;

		for (; ip; ip = next) {
			next = ip->hnext;
			inode_free(ip);
		}
	}
	free(m->hash);
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
	return m->used_blocks;
}

uint64_t tfs_meta_bytes(const struct tfs_meta *m)
{
	return m->bytes;
}

/* ===== inode table ===== */

struct tfs_inode *tfs_meta_get(const struct tfs_meta *m, uint64_t ino)
{
	struct tfs_inode *ip = m->hash[hash64(ino) & (m->nhash - 1)];

	while (ip && ip->a.ino != ino)
		ip = ip->hnext;
	return ip;
}

static void table_grow(struct tfs_meta *m)
{
	size_t n = m->nhash * 2;
	struct tfs_inode **h = calloc(n, sizeof(*h));

	if (!h)
		return;		/* stay at this size: only slower */
	for (size_t i = 0; i < m->nhash; i++) {
		struct tfs_inode *ip = m->hash[i], *next;

		for (; ip; ip = next) {
			size_t b = hash64(ip->a.ino) & (n - 1);

			next = ip->hnext;
			ip->hnext = h[b];
			h[b] = ip;
		}
	}
	free(m->hash);
	m->hash = h;
	m->nhash = n;
}

struct tfs_inode *tfs_meta_add(struct tfs_meta *m, const struct tfs_attr *a)
{
	struct tfs_inode *ip;
	size_t b;

	if (a->ino == 0 || tfs_meta_get(m, a->ino))
		return NULL;
	ip = calloc(1, sizeof(*ip));
	if (!ip)
		return NULL;
	ip->a = *a;
	if (S_ISDIR(a->mode)) {
		ip->dir = calloc(1, sizeof(*ip->dir));
		if (ip->dir) {
			ip->dir->nhash = 8;
			ip->dir->hash = calloc(8, sizeof(*ip->dir->hash));
			ip->dir->next_cookie = FIRST_COOKIE;
		}
		if (!ip->dir || !ip->dir->hash) {
			if (ip->dir)
				free(ip->dir);
			free(ip);
			return NULL;
		}
	}
	b = hash64(a->ino) & (m->nhash - 1);
	ip->hnext = m->hash[b];
	m->hash[b] = ip;
	m->ninodes++;
	m->bytes += TFS_REC_SIZE_INODE;
	if (a->ino >= m->next_ino)
		m->next_ino = a->ino + 1;
	if (m->ninodes > m->nhash)
		table_grow(m);
	return ip;
}

void tfs_meta_remove(struct tfs_meta *m, struct tfs_inode *ip)
{
	struct tfs_inode **pp = &m->hash[hash64(ip->a.ino) & (m->nhash - 1)];

	while (*pp && *pp != ip)
		pp = &(*pp)->hnext;
	if (!*pp)
		return;
	*pp = ip->hnext;
	m->ninodes--;
	m->bytes -= TFS_REC_SIZE_INODE;
	m->bytes -= tfs_extmap_count(&ip->map) * TFS_REC_SIZE_EXTENT;
	m->used_blocks -= tfs_extmap_blocks(&ip->map);
	if (ip->symlink)
		m->bytes -= tfs_rec_size_symlink(strlen(ip->symlink));
	for (size_t i = 0; i < ip->nxattrs; i++)
		m->bytes -= tfs_rec_size_xattr(ip->xattrs[i].nlen,
					       ip->xattrs[i].vlen);
	if (ip->dir)
		for (size_t i = 0; i < ip->dir->olen; i++)
			if (ip->dir->order[i].d)
				m->bytes -= tfs_rec_size_link(
					ip->dir->order[i].d->len);
	inode_free(ip);
}

int tfs_meta_each(struct tfs_meta *m,
		  int (*fn)(struct tfs_inode *ip, void *arg), void *arg)
{
	for (size_t i = 0; i < m->nhash; i++) {
		struct tfs_inode *ip = m->hash[i], *next;

		for (; ip; ip = next) {
			int rc;

			next = ip->hnext;
			rc = fn(ip, arg);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ===== directories ===== */

struct tfs_dirent *tfs_dir_lookup(const struct tfs_inode *dir,
				  const char *name, size_t len)
{
	struct tfs_dirent *e;

	if (!dir->dir)
		return NULL;
	e = dir->dir->hash[hash_name(name, len) & (dir->dir->nhash - 1)];
	for (; e; e = e->hnext)
		if (e->len == len && !memcmp(e->name, name, len))
			return e;
	return NULL;
}

static void dir_rehash(struct tfs_dir *d)
{
	size_t n = d->nhash * 2;
	struct tfs_dirent **h = calloc(n, sizeof(*h));

	if (!h)
		return;
	for (size_t i = 0; i < d->nhash; i++) {
		struct tfs_dirent *e = d->hash[i], *next;

		for (; e; e = next) {
			size_t b = hash_name(e->name, e->len) & (n - 1);

			next = e->hnext;
			e->hnext = h[b];
			h[b] = e;
		}
	}
	free(d->hash);
	d->hash = h;
	d->nhash = n;
}

int tfs_dir_add(struct tfs_meta *m, struct tfs_inode *dir, const char *name,
		size_t len, uint64_t ino)
{
	struct tfs_dir *d = dir->dir;
	struct tfs_dirent *e;
	size_t b;

	if (!d)
		return -ENOTDIR;
	if (tfs_dir_lookup(dir, name, len))
		return -EEXIST;
	if (d->olen == d->ocap) {
		size_t nc = d->ocap ? d->ocap * 2 : 8;
		struct dslot *no = realloc(d->order, nc * sizeof(*no));

		if (!no)
			return -ENOMEM;
		d->order = no;
		d->ocap = nc;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->ino = ino;
	e->cookie = d->next_cookie++;
	e->len = (uint16_t)len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	b = hash_name(name, len) & (d->nhash - 1);
	e->hnext = d->hash[b];
	d->hash[b] = e;
	d->order[d->olen].cookie = e->cookie;
	d->order[d->olen].d = e;
	d->olen++;
	d->count++;
	m->bytes += tfs_rec_size_link(len);
	if (d->count > d->nhash)
		dir_rehash(d);
	return 0;
}

/* Index of the first slot with cookie > after. */
static size_t slot_after(const struct tfs_dir *d, uint64_t after)
{
	size_t lo = 0, hi = d->olen;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->order[mid].cookie <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void dir_compact(struct tfs_dir *d)
{
	size_t j = 0;

	for (size_t i = 0; i < d->olen; i++)
		if (d->order[i].d)
			d->order[j++] = d->order[i];
	d->olen = j;
	d->holes = 0;
}

int tfs_dir_remove(struct tfs_meta *m, struct tfs_inode *dir,
		   const char *name, size_t len)
{
	struct tfs_dir *d = dir->dir;
	struct tfs_dirent **pp, *e;
	size_t i;

	if (!d)
		return -ENOTDIR;
	pp = &d->hash[hash_name(name, len) & (d->nhash - 1)];
	while (*pp && !((*pp)->len == len && !memcmp((*pp)->name, name, len)))
		pp = &(*pp)->hnext;
	e = *pp;
	if (!e)
		return -ENOENT;
	*pp = e->hnext;
	i = slot_after(d, e->cookie - 1);
	if (i < d->olen && d->order[i].d == e) {
		d->order[i].d = NULL;
		d->holes++;
	}
	d->count--;
	m->bytes -= tfs_rec_size_link(len);
	free(e);
	if (d->holes > 64 && d->holes > d->olen / 2)
		dir_compact(d);
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
		if (d->order[i].d)
			return d->order[i].d;
	return NULL;
}

/* ===== extents ===== */

int tfs_meta_map(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		 uint64_t pblk, uint64_t len, uint32_t flags,
		 void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		 void *arg)
{
	size_t n0 = tfs_extmap_count(&ip->map);
	uint64_t b0 = tfs_extmap_blocks(&ip->map);
	int rc = tfs_extmap_set(&ip->map, lblk, pblk, len, flags, freed, arg);

	if (rc)
		return rc;
	m->bytes += (tfs_extmap_count(&ip->map) - n0) * TFS_REC_SIZE_EXTENT;
	m->used_blocks += tfs_extmap_blocks(&ip->map) - b0;
	return 0;
}

int tfs_meta_unmap(struct tfs_meta *m, struct tfs_inode *ip, uint64_t lblk,
		   uint64_t len,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg)
{
	size_t n0 = tfs_extmap_count(&ip->map);
	uint64_t b0 = tfs_extmap_blocks(&ip->map);
	int rc = tfs_extmap_punch(&ip->map, lblk, len, freed, arg);

	if (rc)
		return rc;
	/* unsigned wrap-around makes these subtractions of a decrease */
	m->bytes += (tfs_extmap_count(&ip->map) - n0) * TFS_REC_SIZE_EXTENT;
	m->used_blocks += tfs_extmap_blocks(&ip->map) - b0;
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

int tfs_xattr_set(struct tfs_meta *m, struct tfs_inode *ip, const char *name,
		  size_t nlen, const void *val, size_t vlen)
{
	struct tfs_xattr *x = xattr_findn(ip, name, nlen);
	void *v = malloc(vlen ? vlen : 1);

	if (!v)
		return -ENOMEM;
	if (vlen)
		memcpy(v, val, vlen);
	if (x) {
		m->bytes -= tfs_rec_size_xattr(x->nlen, x->vlen);
		free(x->value);
		x->value = v;
		x->vlen = vlen;
		m->bytes += tfs_rec_size_xattr(nlen, vlen);
		return 0;
	}
	x = realloc(ip->xattrs, (ip->nxattrs + 1) * sizeof(*x));
	if (!x) {
		free(v);
		return -ENOMEM;
	}
	ip->xattrs = x;
	x = &ip->xattrs[ip->nxattrs];
	x->name = strndup(name, nlen);
	if (!x->name) {
		free(v);
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
	free(x->name);
	free(x->value);
	*x = ip->xattrs[--ip->nxattrs];
	return 0;
}

int tfs_meta_set_symlink(struct tfs_meta *m, struct tfs_inode *ip,
			 const char *target, size_t len)
{
	char *t = strndup(target, len);

	if (!t)
		return -ENOMEM;
	if (ip->symlink)
		m->bytes -= tfs_rec_size_symlink(strlen(ip->symlink));
	free(ip->symlink);
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
		rc = wr_maybe_flush(w, tfs_rec_put_symlink(
					       w->b, ip->a.ino, ip->symlink,
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

int tfs_meta_write_records(struct tfs_meta *m, struct tfs_buf *b,
			   size_t chunk,
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
	*nrec = w.nrec;
	return rc;
}
