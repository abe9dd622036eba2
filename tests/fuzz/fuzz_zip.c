/*
 * fuzz_zip.c: a zip directory (lib/tensor/zip.c), then a lookup of each
 * entry by name, and each deflated entry inflated (at most 4 MiB out,
 * then whole if it claims no more, which checks its size and CRC).
 */
#include <stddef.h>
#include <stdint.h>

#include "zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(void *sctx, const void *buf, size_t len)
{
	(void)sctx;
	(void)buf;
	(void)len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_zip_mem m = { data, size };
	struct tfs_zip *z = NULL;
	char err[256];

	if (tfs_zip_open(tfs_zip_read_mem, &m, size, &z, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < z->count; i++) {
		const struct tfs_zip_entry *e = &z->entries[i];

		if (tfs_zip_find(z, e->name) == NULL)
			__builtin_trap();
		if (e->deflated)
			tfs_zip_inflate(tfs_zip_read_mem, &m, e,
					e->size <= (4u << 20) ? UINT64_MAX
							      : 4u << 20,
					discard, NULL, err, sizeof(err));
	}
	tfs_zip_free(z);
	return 0;
}
