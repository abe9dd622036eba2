/*
 * format.c: encoding and decoding of the on-disk structures of format.h.
 *
 * Everything that touches on-disk bytes goes through here, so the layout
 * is written down (format.h) and coded once.  Decoders never trust their
 * input: every length is checked against the bytes that are there, and a
 * record that does not parse is -EUCLEAN, never a crash.
 */
#include "format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

/* ===== buffers ===== */

void tfs_buf_release(struct tfs_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int tfs_buf_reserve(struct tfs_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* ===== records ===== */

static uint8_t *rec_begin(struct tfs_buf *b, uint32_t type, size_t body)
{
	uint8_t *p;

	if (tfs_buf_reserve(b, TFS_REC_HDR + body))
		return NULL;
	p = b->p + b->len;
	tfs_put32(p, type);
	tfs_put32(p + 4, (uint32_t)body);
	b->len += TFS_REC_HDR + body;
	return p + TFS_REC_HDR;
}

static void put_ts(uint8_t *p, const struct tfs_timespec *t)
{
	tfs_put64(p, (uint64_t)t->sec);
	tfs_put32(p + 8, t->nsec);
}

static void get_ts(const uint8_t *p, struct tfs_timespec *t)
{
	t->sec = (int64_t)tfs_get64(p);
	t->nsec = tfs_get32(p + 8);
}

int tfs_rec_put_inode(struct tfs_buf *b, const struct tfs_attr *a)
{
	uint8_t *p = rec_begin(b, TFS_REC_INODE, TFS_INODE_BODY);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, a->ino);
	tfs_put32(p + 8, a->mode);
	tfs_put32(p + 12, a->uid);
	tfs_put32(p + 16, a->gid);
	tfs_put32(p + 20, a->nlink);
	tfs_put64(p + 24, a->size);
	put_ts(p + 32, &a->atime);
	put_ts(p + 44, &a->mtime);
	put_ts(p + 56, &a->ctime);
	tfs_put64(p + 68, a->rdev);
	tfs_put64(p + 76, a->parent);
	memset(p + 84, 0, 8);
	return 0;
}

int tfs_rec_put_free(struct tfs_buf *b, uint64_t ino)
{
	uint8_t *p = rec_begin(b, TFS_REC_FREE, 8);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	return 0;
}

size_t tfs_rec_size_link(size_t name_len)
{
	return TFS_REC_HDR + 16 + name_len;
}

int tfs_rec_put_link(struct tfs_buf *b, uint64_t dir, uint64_t ino,
		     const char *name, size_t len)
{
	uint8_t *p = rec_begin(b, TFS_REC_LINK, 16 + len);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, dir);
	tfs_put64(p + 8, ino);
	memcpy(p + 16, name, len);
	return 0;
}

int tfs_rec_put_unlink(struct tfs_buf *b, uint64_t dir, const char *name,
		       size_t len)
{
	uint8_t *p = rec_begin(b, TFS_REC_UNLINK, 8 + len);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, dir);
	memcpy(p + 8, name, len);
	return 0;
}

int tfs_rec_put_extent(struct tfs_buf *b, uint64_t ino, uint64_t lblk,
		       uint64_t pblk, uint64_t len, uint32_t flags)
{
	uint8_t *p = rec_begin(b, TFS_REC_EXTENT, TFS_EXTENT_BODY);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	tfs_put64(p + 8, lblk);
	tfs_put64(p + 16, pblk);
	tfs_put64(p + 24, len);
	tfs_put32(p + 32, flags);
	return 0;
}

int tfs_rec_put_punch(struct tfs_buf *b, uint64_t ino, uint64_t lblk,
		      uint64_t len)
{
	uint8_t *p = rec_begin(b, TFS_REC_PUNCH, 24);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	tfs_put64(p + 8, lblk);
	tfs_put64(p + 16, len);
	return 0;
}

int tfs_rec_put_refcount(struct tfs_buf *b, uint64_t pblk, uint64_t len,
			 uint32_t count)
{
	uint8_t *p = rec_begin(b, TFS_REC_REFCOUNT, TFS_REFCOUNT_BODY);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, pblk);
	tfs_put64(p + 8, len);
	tfs_put32(p + 16, count);
	return 0;
}

size_t tfs_rec_size_xattr(size_t nlen, size_t vlen)
{
	return TFS_REC_HDR + 12 + nlen + vlen;
}

int tfs_rec_put_xattr(struct tfs_buf *b, uint64_t ino, const char *name,
		      size_t nlen, const void *val, size_t vlen)
{
	uint8_t *p = rec_begin(b, TFS_REC_XATTR, 12 + nlen + vlen);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	tfs_put32(p + 8, (uint32_t)nlen);
	memcpy(p + 12, name, nlen);
	if (vlen)
		memcpy(p + 12 + nlen, val, vlen);
	return 0;
}

int tfs_rec_put_xattr_del(struct tfs_buf *b, uint64_t ino, const char *name,
			  size_t nlen)
{
	uint8_t *p = rec_begin(b, TFS_REC_XATTR_DEL, 8 + nlen);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	memcpy(p + 8, name, nlen);
	return 0;
}

size_t tfs_rec_size_symlink(size_t len)
{
	return TFS_REC_HDR + 8 + len;
}

int tfs_rec_put_symlink(struct tfs_buf *b, uint64_t ino, const char *target,
			size_t len)
{
	uint8_t *p = rec_begin(b, TFS_REC_SYMLINK, 8 + len);

	if (!p)
		return -ENOMEM;
	tfs_put64(p, ino);
	memcpy(p + 8, target, len);
	return 0;
}

static int valid_name(const char *s, size_t n)
{
	if (n == 0 || n > TFS_NAME_MAX)
		return 0;
	if (memchr(s, '/', n) || memchr(s, '\0', n))
		return 0;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	return 1;
}

int tfs_rec_next(const uint8_t *p, size_t len, size_t *pos, struct tfs_rec *r)
{
	const uint8_t *b;
	uint32_t type, blen;

	if (*pos == len)
		return 0;
	if (len - *pos < TFS_REC_HDR)
		return -EUCLEAN;
	type = tfs_get32(p + *pos);
	blen = tfs_get32(p + *pos + 4);
	if (blen > len - *pos - TFS_REC_HDR)
		return -EUCLEAN;
	b = p + *pos + TFS_REC_HDR;
	memset(r, 0, sizeof(*r));
	r->type = type;
	switch (type) {
	case TFS_REC_INODE:
		if (blen != TFS_INODE_BODY)
			return -EUCLEAN;
		r->attr.ino = tfs_get64(b);
		r->attr.mode = tfs_get32(b + 8);
		r->attr.uid = tfs_get32(b + 12);
		r->attr.gid = tfs_get32(b + 16);
		r->attr.nlink = tfs_get32(b + 20);
		r->attr.size = tfs_get64(b + 24);
		get_ts(b + 32, &r->attr.atime);
		get_ts(b + 44, &r->attr.mtime);
		get_ts(b + 56, &r->attr.ctime);
		r->attr.rdev = tfs_get64(b + 68);
		r->attr.parent = tfs_get64(b + 76);
		r->ino = r->attr.ino;
		break;
	case TFS_REC_FREE:
		if (blen != 8)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		break;
	case TFS_REC_LINK:
		if (blen < 17)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->child = tfs_get64(b + 8);
		r->name = (const char *)b + 16;
		r->name_len = blen - 16;
		if (!valid_name(r->name, r->name_len))
			return -EUCLEAN;
		break;
	case TFS_REC_UNLINK:
		if (blen < 9)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->name = (const char *)b + 8;
		r->name_len = blen - 8;
		if (!valid_name(r->name, r->name_len))
			return -EUCLEAN;
		break;
	case TFS_REC_EXTENT:
		if (blen != TFS_EXTENT_BODY)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->lblk = tfs_get64(b + 8);
		r->pblk = tfs_get64(b + 16);
		r->len = tfs_get64(b + 24);
		r->flags = tfs_get32(b + 32);
		if (r->len == 0 || r->flags & ~1u)
			return -EUCLEAN;
		break;
	case TFS_REC_PUNCH:
		if (blen != 24)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->lblk = tfs_get64(b + 8);
		r->len = tfs_get64(b + 16);
		break;
	case TFS_REC_XATTR:
		if (blen < 12)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->name_len = tfs_get32(b + 8);
		if (r->name_len == 0 || r->name_len > TFS_XATTR_NAME_MAX ||
		    r->name_len > blen - 12)
			return -EUCLEAN;
		r->name = (const char *)b + 12;
		r->value = b + 12 + r->name_len;
		r->value_len = blen - 12 - r->name_len;
		if (r->value_len > TFS_XATTR_VALUE_MAX ||
		    memchr(r->name, '\0', r->name_len))
			return -EUCLEAN;
		break;
	case TFS_REC_XATTR_DEL:
		if (blen < 9 || blen - 8 > TFS_XATTR_NAME_MAX)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->name = (const char *)b + 8;
		r->name_len = blen - 8;
		break;
	case TFS_REC_SYMLINK:
		if (blen < 9 || blen - 8 > TFS_SYMLINK_MAX)
			return -EUCLEAN;
		r->ino = tfs_get64(b);
		r->name = (const char *)b + 8;
		r->name_len = blen - 8;
		if (memchr(r->name, '\0', r->name_len))
			return -EUCLEAN;
		break;
	case TFS_REC_REFCOUNT:
		if (blen != TFS_REFCOUNT_BODY)
			return -EUCLEAN;
		r->pblk = tfs_get64(b);
		r->len = tfs_get64(b + 8);
		r->flags = tfs_get32(b + 16);
		if (r->len == 0 || r->pblk + r->len < r->pblk || r->flags == 0)
			return -EUCLEAN;
		break;
	default:
		return -EUCLEAN;
	}
	*pos += TFS_REC_HDR + blen;
	return 1;
}

/* ===== superblock ===== */

/* The version a decoded or to-be-encoded superblock has. */
static uint32_t super_version(const struct tfs_super *s)
{
	if (s->version == TFS_VERSION_V2 || s->version == TFS_VERSION_V3)
		return s->version;
	return TFS_VERSION;
}

uint64_t tfs_super_member_blocks(const struct tfs_super *s, uint32_t m)
{
	if (m == 0)
		return s->dev_blocks;
	if (m >= s->nmembers || m >= TFS_SET_MAX)
		return 0;
	return s->member_blocks[m];
}

uint64_t tfs_super_data_start(const struct tfs_super *s, uint32_t m)
{
	return m == 0 ? s->data_start : TFS_MEMBER_DATA_START;
}

uint64_t tfs_super_data_blocks(const struct tfs_super *s)
{
	uint64_t n = 0;

	for (uint32_t m = 0; m < (s->nmembers ? s->nmembers : 1); m++)
		n += tfs_super_member_blocks(s, m) - tfs_super_data_start(s, m);
	return n;
}

int tfs_super_in_data(const struct tfs_super *s, uint64_t pblk, uint64_t len)
{
	uint64_t m = pblk >> TFS_MEMBER_BITS;
	uint64_t b = pblk & ((1ull << TFS_MEMBER_BITS) - 1);
	uint64_t end;

	if (m >= TFS_SET_MAX || (m && m >= s->nmembers))
		return 0;
	end = tfs_super_member_blocks(s, (uint32_t)m);
	return b >= tfs_super_data_start(s, (uint32_t)m) && b < end &&
	       len <= end - b;
}

void tfs_super_encode(const struct tfs_super *s, uint8_t *b)
{
	uint32_t v = super_version(s);
	uint32_t max = v == TFS_VERSION_V2 ? TFS_MAP_MAX_V2 : TFS_MAP_MAX;
	uint32_t n = s->npieces <= max ? s->npieces : max;

	memset(b, 0, TFS_BLOCK_SIZE);
	memcpy(b, TFS_MAGIC, 8);
	tfs_put32(b + 8, v);
	tfs_put32(b + 12, TFS_BLOCK_SIZE);
	tfs_put64(b + 16, s->generation);
	tfs_put64(b + 24, s->dev_blocks);
	tfs_put64(b + 32, s->journal_start);
	tfs_put64(b + 40, s->journal_blocks);
	tfs_put64(b + 48, s->data_start);
	tfs_put32(b + 56, s->flags);
	tfs_put32(b + 60, n);
	tfs_put64(b + 64, s->ckpt_len);
	tfs_put32(b + 72, s->ckpt_crc);
	tfs_put64(b + 80, s->ckpt_seq);
	memcpy(b + 88, s->uuid, 16);
	tfs_put64(b + 104, s->ctime_ns);
	tfs_put64(b + 112, s->wtime_ns);
	for (uint32_t i = 0; i < n; i++) {
		tfs_put64(b + 128 + 16 * i, s->map[i].start);
		tfs_put64(b + 136 + 16 * i, s->map[i].len);
	}
	if (v != TFS_VERSION_V2) {
		uint32_t c = s->nmembers ? s->nmembers : 1;

		c = c < TFS_SET_MAX ? c : TFS_SET_MAX;
		tfs_put32(b + 76, s->member);
		tfs_put32(b + 120, c);
		tfs_put32(b + 124, s->stripe_blocks ? s->stripe_blocks
						    : TFS_STRIPE_DEFAULT);
		for (uint32_t i = 0; i < c; i++)
			tfs_put64(b + TFS_SET_TABLE + 8 * i,
				  i == s->member ? s->dev_blocks
						 : s->member_blocks[i]);
	}
	tfs_put32(b + 4092, tfs_crc32c(0, b, 4092));
}

/*
 * Whether a decoded superblock's layout is the one mkfs makes: on member
 * 0, the superblocks, the journal and the data area back to back in that
 * order, each non-empty, the data area ending at dev_blocks; on another
 * member, no journal and the data area from TFS_MEMBER_DATA_START; and
 * every byte offset (blocks x 4096) an off_t, every member's blocks a
 * block number inside a member.  Every sum and product is checked, so
 * that fields near 2^63 or 2^64 cannot wrap around into a layout that
 * looks right.
 */
static int super_layout_ok(const struct tfs_super *s)
{
	uint64_t data;

	/* dev_blocks x 4096, and so every offset below it, fits an off_t */
	if (s->dev_blocks == 0 || s->dev_blocks > (UINT64_MAX >> 13) ||
	    s->dev_blocks > 1ull << TFS_MEMBER_BITS)
		return 0;
	if (s->member) {
		return s->journal_start == 2 && s->journal_blocks == 0 &&
		       s->data_start == TFS_MEMBER_DATA_START &&
		       s->dev_blocks > s->data_start;
	}
	if (s->journal_start != 2 || s->journal_blocks < 2)
		return 0;
	if (__builtin_add_overflow(s->journal_start, s->journal_blocks, &data))
		return 0;
	if (s->data_start != data)
		return 0;
	/* a data area of at least one block, inside the device */
	if (data >= s->dev_blocks)
		return 0;
	return 1;
}

/*
 * Whether the map is sound: 1..max pieces, each non-empty and inside the
 * data area of its member (start and length compared with what is left,
 * never added first, so nothing wraps), no two overlapping, together
 * exactly the blocks of the checkpoint's length, which fits the data
 * area of the set.  Needs a sound layout and member table.
 */
static int super_map_ok(const struct tfs_super *s, uint32_t max)
{
	uint64_t total = 0, need, room = 0;

	if (s->npieces == 0 || s->npieces > max)
		return 0;
	for (uint32_t m = 0; m < (s->nmembers ? s->nmembers : 1); m++)
		room += tfs_super_member_blocks(s, m) -
			tfs_super_data_start(s, m); /* < 2^47: no wrap */
	if (s->ckpt_len < TFS_HDR_SIZE || s->ckpt_len > room * TFS_BLOCK_SIZE)
		return 0;
	need = (s->ckpt_len + TFS_BLOCK_SIZE - 1) / TFS_BLOCK_SIZE;
	for (uint32_t i = 0; i < s->npieces; i++) {
		const struct tfs_piece *p = &s->map[i];

		if (p->len == 0 || !tfs_super_in_data(s, p->start, p->len))
			return 0;
		total += p->len; /* each < 2^40: no wrap */
		for (uint32_t k = 0; k < i; k++) {
			const struct tfs_piece *q = &s->map[k];

			if (p->start < q->start + q->len &&
			    q->start < p->start + p->len)
				return 0;
		}
	}
	return total == need;
}

/*
 * Whether the member fields of a version-3 superblock are sound: the
 * member inside the count, a stripe unit in range, and a table naming
 * this member's size and, for every other member, a size that holds at
 * least one data block and fits a member.
 */
static int super_set_ok(const struct tfs_super *s)
{
	if (s->nmembers < 1 || s->nmembers > TFS_SET_MAX ||
	    s->member >= s->nmembers)
		return 0;
	if (s->stripe_blocks < 1 || s->stripe_blocks > TFS_STRIPE_MAX)
		return 0;
	if (s->member_blocks[s->member] != s->dev_blocks)
		return 0;
	if (s->member_blocks[0] <= 2 ||
	    s->member_blocks[0] > 1ull << TFS_MEMBER_BITS)
		return 0;
	for (uint32_t m = 1; m < s->nmembers; m++)
		if (s->member_blocks[m] <= TFS_MEMBER_DATA_START ||
		    s->member_blocks[m] > 1ull << TFS_MEMBER_BITS)
			return 0;
	return 1;
}

uint32_t tfs_super_version(const uint8_t *b)
{
	return tfs_get32(b + 8);
}

uint64_t tfs_super_map_blocks(const struct tfs_super *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->npieces && i < TFS_MAP_MAX_V2; i++)
		n += s->map[i].len;
	return n;
}

int tfs_super_same_ckpt(const struct tfs_super *a, const struct tfs_super *b)
{
	return a->ckpt_seq == b->ckpt_seq && a->npieces && b->npieces &&
	       a->map[0].start == b->map[0].start;
}

int tfs_super_decode(const uint8_t *b, struct tfs_super *s)
{
	uint32_t v, max;

	if (memcmp(b, TFS_MAGIC, 8))
		return -EINVAL;
	if (tfs_get32(b + 4092) != tfs_crc32c(0, b, 4092))
		return -EUCLEAN;
	v = tfs_get32(b + 8);
	if (v != TFS_VERSION && v != TFS_VERSION_V3 && v != TFS_VERSION_V2)
		return -EPROTO;
	if (tfs_get32(b + 12) != TFS_BLOCK_SIZE)
		return -EUCLEAN;
	memset(s, 0, sizeof(*s));
	s->version = v;
	s->generation = tfs_get64(b + 16);
	s->dev_blocks = tfs_get64(b + 24);
	s->journal_start = tfs_get64(b + 32);
	s->journal_blocks = tfs_get64(b + 40);
	s->data_start = tfs_get64(b + 48);
	s->flags = tfs_get32(b + 56);
	s->npieces = tfs_get32(b + 60);
	s->ckpt_len = tfs_get64(b + 64);
	s->ckpt_crc = tfs_get32(b + 72);
	s->ckpt_seq = tfs_get64(b + 80);
	memcpy(s->uuid, b + 88, 16);
	s->ctime_ns = tfs_get64(b + 104);
	s->wtime_ns = tfs_get64(b + 112);
	if (v == TFS_VERSION_V2) {
		/* one device: member 0 of one, the default stripe */
		if (tfs_get32(b + 76) || tfs_get64(b + 120))
			return -EUCLEAN;
		s->nmembers = 1;
		s->stripe_blocks = TFS_STRIPE_DEFAULT;
		s->member_blocks[0] = s->dev_blocks;
		max = TFS_MAP_MAX_V2;
	} else {
		s->member = tfs_get32(b + 76);
		s->nmembers = tfs_get32(b + 120);
		s->stripe_blocks = tfs_get32(b + 124);
		for (uint32_t i = 0; i < s->nmembers && i < TFS_SET_MAX; i++)
			s->member_blocks[i] =
			    tfs_get64(b + TFS_SET_TABLE + 8 * i);
		if (!super_set_ok(s))
			return -EUCLEAN;
		max = TFS_MAP_MAX;
	}
	if (!super_layout_ok(s))
		return -EUCLEAN;
	if (s->member) /* written once by mkfs: no checkpoint, no flags */
		return s->npieces == 0 && s->ckpt_len == 0 && s->flags == 0
			   ? 0
			   : -EUCLEAN;
	if (s->npieces == 0 || s->npieces > max)
		return -EUCLEAN;
	for (uint32_t i = 0; i < s->npieces; i++) {
		s->map[i].start = tfs_get64(b + 128 + 16 * i);
		s->map[i].len = tfs_get64(b + 136 + 16 * i);
	}
	return super_map_ok(s, max) ? 0 : -EUCLEAN;
}

/* ===== headers ===== */

void tfs_ckpt_hdr_encode(const struct tfs_hdr *h, uint8_t *p)
{
	memset(p, 0, TFS_HDR_SIZE);
	memcpy(p, TFS_CKPT_MAGIC, 8);
	tfs_put64(p + 8, h->seq);
	tfs_put64(p + 16, h->next_ino);
	tfs_put64(p + 24, h->used_blocks);
	tfs_put64(p + 32, h->nrec);
}

int tfs_ckpt_hdr_decode(const uint8_t *p, struct tfs_hdr *h)
{
	if (memcmp(p, TFS_CKPT_MAGIC, 8))
		return -EUCLEAN;
	memset(h, 0, sizeof(*h));
	h->seq = tfs_get64(p + 8);
	h->next_ino = tfs_get64(p + 16);
	h->used_blocks = tfs_get64(p + 24);
	h->nrec = tfs_get64(p + 32);
	return 0;
}

static uint32_t txn_crc(const uint8_t *p, const uint8_t *payload, uint32_t len)
{
	uint8_t hdr[TFS_HDR_SIZE];

	memcpy(hdr, p, TFS_HDR_SIZE);
	tfs_put32(hdr + 36, 0);
	return tfs_crc32c(tfs_crc32c(0, hdr, TFS_HDR_SIZE), payload, len);
}

void tfs_txn_hdr_encode(const struct tfs_hdr *h, uint8_t *p,
			const uint8_t *payload)
{
	memset(p, 0, TFS_HDR_SIZE);
	tfs_put32(p, TFS_JOURNAL_MAGIC);
	tfs_put32(p + 4, h->payload_len);
	tfs_put64(p + 8, h->seq);
	tfs_put64(p + 16, h->next_ino);
	tfs_put64(p + 24, h->used_blocks);
	tfs_put32(p + 32, (uint32_t)h->nrec);
	tfs_put32(p + 36, txn_crc(p, payload, h->payload_len));
}

int tfs_txn_hdr_decode(const uint8_t *p, struct tfs_hdr *h)
{
	if (tfs_get32(p) != TFS_JOURNAL_MAGIC)
		return -EUCLEAN;
	memset(h, 0, sizeof(*h));
	h->payload_len = tfs_get32(p + 4);
	h->seq = tfs_get64(p + 8);
	h->next_ino = tfs_get64(p + 16);
	h->used_blocks = tfs_get64(p + 24);
	h->nrec = tfs_get32(p + 32);
	h->crc = tfs_get32(p + 36);
	return 0;
}

int tfs_txn_verify(const uint8_t *p, const struct tfs_hdr *h,
		   const uint8_t *payload)
{
	return txn_crc(p, payload, h->payload_len) == h->crc ? 0 : -EUCLEAN;
}

/* ===== layout ===== */

int tfs_layout(uint64_t dev_blocks, struct tfs_super *s)
{
	const uint64_t mib = (1u << 20) / TFS_BLOCK_SIZE;
	uint64_t journal;

	if (dev_blocks * TFS_BLOCK_SIZE < TFS_MIN_DEVICE_BYTES)
		return -ENOSPC;
	/*
	 * The journal gets 1/256 of the device, at least 3 MiB and at most
	 * 1 GiB (what version 1 gave it).  It only needs to hold what is
	 * committed between two checkpoints: a full journal forces one.
	 * Checkpoints take their blocks from the data area (format.h).
	 */
	journal = dev_blocks / 256;
	if (journal < 3 * mib)
		journal = 3 * mib;
	if (journal > 1024 * mib)
		journal = 1024 * mib;
	s->version = TFS_VERSION;
	s->member = 0;
	s->nmembers = 1;
	s->stripe_blocks = TFS_STRIPE_DEFAULT;
	s->member_blocks[0] = dev_blocks;
	s->dev_blocks = dev_blocks;
	s->journal_start = 2;
	s->journal_blocks = journal;
	s->data_start = s->journal_start + s->journal_blocks;
	return 0;
}
