/*
 * xattr.c: extended attributes, stored ones and the virtual ones.
 *
 * Stored xattrs live in the inode (meta.c) and are journaled as XATTR
 * records, like any other change under fs->lock.  Two namespaces have
 * rules of their own:
 *   user.tensorfs.*  virtual, read-only (EPERM on set and remove), not
 *                    listed: .extents (extent count) and .cached (bytes
 *                    of the file in the cache), computed when read;
 *   user.tensor.*    dtype and shape accept only a real dtype or shape
 *                    (EINVAL otherwise); when not set they are read from
 *                    the file's own .npy, .safetensors or torch.save
 *                    header.
 * system.* (POSIX ACLs) is not supported: EOPNOTSUPP to set, get or
 * remove.
 */
#include "fs_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"
#include "tensor.h"

#define VXATTR_EXTENTS	"user.tensorfs.extents"
#define VXATTR_CACHED	"user.tensorfs.cached"
#define TFS_XATTR_DTYPE "user.tensor.dtype"
#define TFS_XATTR_SHAPE "user.tensor.shape"

/* ===== xattrs ===== */

static int vxattr(const char *name)
{
	return !strncmp(name, "user.tensorfs.", 14);
}

/*
 * user.tensor.dtype and user.tensor.shape describe a file's tensor to
 * tensorfs-cat and other readers: a value that is not a dtype or a shape
 * is refused (EINVAL) rather than kept to mislead them.  A trailing
 * newline (echo -n forgotten) is allowed.
 */
static int check_tensor_xattr(const char *name, const void *value, size_t size)
{
	struct tfs_tensor_shape shape;
	char v[256];
	int dtype = !strcmp(name, TFS_XATTR_DTYPE);

	if (!dtype && strcmp(name, TFS_XATTR_SHAPE))
		return 0;
	if (size >= sizeof(v) || memchr(value, '\0', size))
		return -EINVAL;
	memcpy(v, value, size);
	v[size] = '\0';
	if (size && v[size - 1] == '\n')
		v[size - 1] = '\0';
	if (dtype)
		return tfs_tensor_dtype_lookup(v) < 0 ? -EINVAL : 0;
	return tfs_tensor_shape_parse(v, &shape) ? -EINVAL : 0;
}

int tfs_setxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		 const void *value, size_t size, int flags)
{
	struct tfs_inode *ip;
	struct tfs_xattr *x;
	size_t nlen = strlen(name);
	int rc = 0;

	if (nlen == 0 || nlen > TFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (size > TFS_XATTR_VALUE_MAX)
		return -E2BIG;
	if (!strncmp(name, "system.", 7))
		return -EOPNOTSUPP;
	if (vxattr(name))
		return -EPERM;
	rc = check_tensor_xattr(name, value, size);
	if (!rc)
		rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	x = tfs_xattr_find(ip, name);
	if (x && flags & TFS_XATTR_CREATE) {
		rc = -EEXIST;
		goto out;
	}
	if (!x && flags & TFS_XATTR_REPLACE) {
		rc = -ENODATA;
		goto out;
	}
	if (!x || size > x->vlen) {
		rc = tfs_txn_room(
		    fs, tfs_rec_size_xattr(nlen, size) -
			    (x ? tfs_rec_size_xattr(nlen, x->vlen) : 0));
		if (rc)
			goto out;
	}
	rc = tfs_xattr_set(fs->m, ip, name, nlen, value, size);
	if (rc)
		goto out;
	tfs_txn_rec(fs,
		    tfs_rec_put_xattr(&fs->txn, ino, name, nlen, value, size));
	tfs_txn_touch(fs, ip, 0);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static ssize_t copy_out(void *dst, size_t size, const void *src, size_t len)
{
	if (size == 0)
		return (ssize_t)len;
	if (len > size)
		return -ERANGE;
	memcpy(dst, src, len);
	return (ssize_t)len;
}

/* The largest header read to answer user.tensor.* (safetensors headers
 * of big checkpoints run to a few MiB). */
#define HEADER_XATTR_MAX (16u << 20)

struct file_ref {
	struct tfs_fs *fs;
	uint64_t ino;
};

/* tfs_zip_read_fn over a file of the file system. */
static ssize_t read_file(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct file_ref *f = ctx;

	return tfs_read(f->fs, f->ino, buf, len, off);
}

/*
 * user.tensor.dtype (shape 0) or user.tensor.shape (shape 1) of a file
 * that has none set, from its .npy, .safetensors or torch.save header:
 * the tensor's dtype or shape ("4096,1024"); for a file of several
 * tensors, one "name: value" line per tensor.  NULL when the file has no
 * such header.  Caller frees.
 */
static char *header_xattr(struct tfs_fs *fs, uint64_t ino, uint64_t fsize,
			  int shape)
{
	struct tfs_tensor_list *l = NULL;
	char *out = NULL, err[128];
	size_t len = 0;
	FILE *m;
	struct file_ref f = { fs, ino };

	if (tfs_tensor_read(read_file, &f, fsize, HEADER_XATTR_MAX, &l, NULL,
			    err, sizeof(err)) ||
	    !l || !l->count)
		goto out;
	m = open_memstream(&out, &len);
	if (!m)
		goto out;
	for (size_t i = 0; i < l->count; i++) {
		const struct tfs_tensor *t = &l->tensors[i];
		char v[256];

		if (shape)
			tfs_tensor_shape_format(&t->shape, 0, v, sizeof(v));
		else
			snprintf(v, sizeof(v), "%s",
				 t->dtype >= 0 ? tfs_tensor_dtype_name(t->dtype)
					       : t->dtype_name);
		if (l->count == 1)
			fputs(v, m);
		else
			fprintf(m, "%s%s: %s", i ? "\n" : "", t->name, v);
	}
	if (fclose(m)) {
		free(out);
		out = NULL;
	}
out:
	tfs_tensor_list_free(l);
	return out;
}

ssize_t tfs_getxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		     void *value, size_t size)
{
	struct tfs_inode *ip;
	struct tfs_xattr *x;
	ssize_t rc;
	char num[32];

	/* as set: no POSIX ACLs here.  EOPNOTSUPP, not ENODATA, as ext4
	 * without ACLs answers, lets ls -l, cp -a and the like stop asking
	 * for each file (a round trip each) after the first */
	if (!strncmp(name, "system.", 7))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
	} else if (!strcmp(name, VXATTR_EXTENTS) && S_ISREG(ip->a.mode)) {
		int n = snprintf(num, sizeof(num), "%zu",
				 tfs_extmap_count(&ip->map));

		rc = copy_out(value, size, num, (size_t)n);
	} else if (!strcmp(name, VXATTR_CACHED) && S_ISREG(ip->a.mode)) {
		/* lock order: fs->lock, then the cache's */
		int n = snprintf(
		    num, sizeof(num), "%llu",
		    (unsigned long long)tfs_cache_bytes_of(fs->cache, ino));

		rc = copy_out(value, size, num, (size_t)n);
	} else if ((x = tfs_xattr_find(ip, name))) {
		rc = copy_out(value, size, x->value, x->vlen);
	} else if (S_ISREG(ip->a.mode) && (!strcmp(name, TFS_XATTR_DTYPE) ||
					   !strcmp(name, TFS_XATTR_SHAPE))) {
		uint64_t fsize = ip->a.size;
		char *v;

		/* not set: read from the file's own header, without the
		 * lock (reading takes the file's locks) */
		pthread_mutex_unlock(&fs->lock);
		v = header_xattr(fs, ino, fsize,
				 !strcmp(name, TFS_XATTR_SHAPE));
		rc = v ? copy_out(value, size, v, strlen(v)) : -ENODATA;
		free(v);
		return rc;
	} else {
		rc = -ENODATA;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t tfs_listxattr(struct tfs_fs *fs, uint64_t ino, char *list, size_t size)
{
	struct tfs_inode *ip;
	size_t need = 0, pos = 0;
	ssize_t rc;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < ip->nxattrs; i++)
		need += ip->xattrs[i].nlen + 1;
	if (size == 0) {
		rc = (ssize_t)need;
		goto out;
	}
	if (need > size) {
		rc = -ERANGE;
		goto out;
	}
	for (size_t i = 0; i < ip->nxattrs; i++) {
		memcpy(list + pos, ip->xattrs[i].name, ip->xattrs[i].nlen + 1);
		pos += ip->xattrs[i].nlen + 1;
	}
	rc = (ssize_t)need;
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_removexattr(struct tfs_fs *fs, uint64_t ino, const char *name)
{
	struct tfs_inode *ip;
	size_t nlen = strlen(name);
	int rc;

	if (!strncmp(name, "system.", 7))
		return -EOPNOTSUPP;
	if (vxattr(name))
		return -EPERM;
	rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	rc = tfs_xattr_del(fs->m, ip, name, nlen);
	if (!rc) {
		tfs_txn_rec(fs,
			    tfs_rec_put_xattr_del(&fs->txn, ino, name, nlen));
		tfs_txn_touch(fs, ip, 0);
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
