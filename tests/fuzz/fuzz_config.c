/*
 * fuzz_config.c: a tensorfs.ini (tfs_config_load_buffer in lib/config.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tfs_config c;
	char err[512];

	tfs_config_defaults(&c);
	tfs_config_load_buffer(&c, "fuzz.ini", (const char *)data, size, err,
			       sizeof(err));
	return 0;
}
