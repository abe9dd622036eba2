/*
 * gen-man.c: write tensorfs.ini(5) from its template and the key table.
 *
 *   gen-man TEMPLATE OUTPUT
 *
 * Copies TEMPLATE (roff) to OUTPUT, replacing the line "@KEYS@" with one
 * entry per configuration key, in table order, each under its section:
 * name, unit, default, and the key's doc string.  The key list of the
 * manual thus comes from the same table as the parser, the defaults and
 * --print-config (lib/config.h), and cannot drift from them.  A build
 * step, not installed.  Exit 0, or 1 with a message.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"

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
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	if (fclose(out) || !found) {
		fprintf(stderr, "gen-man: %s\n", found ? "cannot write the page"
						       : "no @KEYS@ line in the template");
		return 1;
	}
	return 0;
}
