/*
 * fuzz_deepspeed.c: a DeepSpeed config (tfs_deepspeed_read in
 * lib/plan/deepspeed.c), into default settings.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "deepspeed.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tfs_config c;
	static struct tfs_plan p;
	static struct tfs_deepspeed ds;
	char err[1024];

	tfs_config_defaults(&c);
	tfs_plan_init(&p);
	memset(&ds, 0, sizeof(ds));
	ds.name = "ds.json";
	ds.c = &c;
	ds.p = &p;
	ds.hidden = size & 1 ? 4096 : 0;
	/* the reading differs before 0.15 (pydantic 1, use_gds), before
	 * 0.16.4 (thread_count), and by the keys each version knows */
	ds.version = size & 2 ? 1405 : size & 4 ? 1600 : 0;
	tfs_deepspeed_read(&ds, (const char *)data, size, err, sizeof(err));
	return 0;
}
