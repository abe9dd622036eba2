/*
 * gen-man.c: write a manual page from its template and the library's
 * own tables.
 *
 *   gen-man TEMPLATE OUTPUT
 *
 * Copies TEMPLATE (roff) to OUTPUT, replacing
 *   - the line "@KEYS@" with one entry per configuration key, in table
 *     order, each under its section: name, unit, default, and the key's
 *     doc string (tensorfs.ini(5)), from the table of the parser, the
 *     defaults and --print-config (lib/config.h);
 *   - @PROJECT_VERSION@, and the sizes of mkfs.tensorfs(8) from
 *     tfs_mkfs_limits() (lib/mkfs.h), which --help prints too:
 *     @MKFS_MIN_SIZE@, @MKFS_JOURNAL_FRACTION@, @MKFS_JOURNAL_MIN@,
 *     @MKFS_JOURNAL_MAX@, @MKFS_JOURNAL_100G@ (the journal of a 100 GiB
 *     device);
 * so that the manual cannot drift from the code.  A template with none
 * of them is an error.  A build step, not installed.  Exit 0, or 1 with
 * a message.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mkfs.h"
#include "units.h"

/* Text for roff: backslashes and hyphens escaped, no control line. */
static void roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

static void keys(FILE *f)
{
	size_t n;
	const struct tfs_cfg_key *k = tfs_config_keys(&n);
	const char *sec = NULL;

	for (size_t i = 0; i < n; i++, k++) {
		if (!sec || strcmp(sec, k->section)) {
			sec = k->section;
			fprintf(f, ".SS [%s]\n", sec);
		}
		/* the tag "name = default" is longer than the indent, so
		 * the text always starts on the next line */
		fprintf(f, ".TP\n.B \"%s = ", k->name);
		roff_text(f, *k->def ? k->def : "(empty)");
		fputs("\"\nUnit: ", f);
		roff_text(f, k->unit);
		fputs(".  ", f);
		roff_text(f, k->doc);
		fputc('\n', f);
	}
}

/* Write line to f with the @NAME@ values put in; how many there were. */
static int values(FILE *f, const char *line)
{
	struct tfs_mkfs_limits l;
	char v[5][32];
	const char *names[5] = {
		"@MKFS_MIN_SIZE@",     "@MKFS_JOURNAL_FRACTION@",
		"@MKFS_JOURNAL_MIN@",  "@MKFS_JOURNAL_MAX@",
		"@MKFS_JOURNAL_100G@",
	};
	const char *p = line, *at;
	int i, n = 0;

	tfs_mkfs_limits(&l);
	tfs_format_size(l.min_size, v[0], sizeof(v[0]));
	snprintf(v[1], sizeof(v[1]), "%" PRIu64, l.journal_fraction);
	tfs_format_size(l.journal_min, v[2], sizeof(v[2]));
	tfs_format_size(l.journal_max, v[3], sizeof(v[3]));
	tfs_format_size(tfs_mkfs_journal_bytes(100ull << 30), v[4],
			sizeof(v[4]));
	while ((at = strchr(p, '@'))) {
		fwrite(p, 1, (size_t)(at - p), f);
		p = at;
		if (!strncmp(p, "@PROJECT_VERSION@", 17)) {
			fputs(TFS_VERSION_STRING, f);
			p += 17;
			n++;
			continue;
		}
		for (i = 0; i < 5; i++)
			if (!strncmp(p, names[i], strlen(names[i])))
				break;
		if (i < 5) {
			fputs(v[i], f);
			p += strlen(names[i]);
			n++;
		} else {
			fputc(*p++, f);
		}
	}
	fputs(p, f);
	return n;
}

int main(int argc, char **argv)
{
	char line[4096];
	FILE *in, *out;
	int found = 0;

	if (argc != 3) {
		fputs("usage: gen-man TEMPLATE OUTPUT\n", stderr);
		return 1;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		fclose(in);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		if (!strcmp(line, "@KEYS@\n")) {
			keys(out);
			found = 1;
		} else if (values(out, line)) {
			found = 1;
		}
	}
	fclose(in);
	if (fclose(out) || !found) {
		fprintf(stderr, "gen-man: %s\n",
			found ? "cannot write the page"
			      : "nothing to fill in the template");
		return 1;
	}
	return 0;
}
