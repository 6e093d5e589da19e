/* The command line of every tool and sample, in one place: getopt_long (glibc) with one behaviour for
 * all of them, from C and from C++.
 *
 *   - `--opt value` and `--opt=value` both work, options and positional arguments may come in any order
 *     (getopt_long permutes), `--` ends the options, and an unambiguous prefix of an option works too;
 *   - a missing value, an unknown option, a value given to an option that takes none, and a bad number
 *     print "TOOL: what is wrong" and the usage on stderr, and exit with status 2;
 *   - `--help` (or `-h`) prints the usage and the help text on stdout and exits 0; `--version` prints
 *     "TOOL X.Y.Z (ABI M.N)" (braid_version_string) and exits 0.
 *
 * A program lists its options in a table ending with CLI_STANDARD_OPTIONS and {0}, its own values
 * from CLI_FIRST up, and reads them in a loop:
 *
 *   enum { OPT_DEVICE = CLI_FIRST, OPT_JSON };
 *   static const struct option options[] = {{"device", required_argument, NULL, OPT_DEVICE},
 *                                           {"json", no_argument, NULL, OPT_JSON}, CLI_STANDARD_OPTIONS, {0}};
 *   cli_parser cli = cli_parser_init("braid-x", "usage: braid-x [--device NAME] [--json]\n",
 *                                    "What it does.\n", options);
 *   for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;)
 *     switch (opt) { case OPT_DEVICE: device = cli.value; break; ... }
 *   positional arguments: argv[optind] .. argv[argc - 1]
 */
#pragma once

#include <getopt.h>

#ifdef __cplusplus
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>
extern "C" {
#endif

/* --help and --version, answered by cli_next itself; a program's own option values start at CLI_FIRST
 * (above every character, so none of them is also a short option). */
enum { CLI_HELP = 'h', CLI_VERSION = 256, CLI_FIRST = 257 };
#define CLI_STANDARD_OPTIONS \
  {"help", no_argument, NULL, CLI_HELP}, { "version", no_argument, NULL, CLI_VERSION }

typedef struct cli_parser {
  const char* tool;             /* "braid-lenet": starts every message and the --version line */
  const char* usage;            /* "usage: ...\n": after every error (stderr) and first in --help */
  const char* help;             /* printed after the usage by --help (may be NULL) */
  const struct option* options; /* ends with CLI_STANDARD_OPTIONS and {0} */
  const char* name;             /* set by cli_next: the option just read, "--epochs" */
  const char* value;            /* set by cli_next: its value, NULL for an option without one */
  char name_buffer[64];
  /* Short options beyond -h, in getopt's syntax ("n:"), each with the value of its long option in the
   * table; a leading '+' stops at the first positional argument, so that what follows is passed on
   * untouched (braid-run's command). NULL: none. Set after cli_parser_init. */
  const char* short_options;
} cli_parser;

/* A parser for one command line: TOOL, the usage line(s), the help text (may be NULL), the table. */
cli_parser cli_parser_init(const char* tool, const char* usage, const char* help, const struct option* options);

/* The next option's value from the table (name and value in the parser), or -1 after the last
 * option; positional arguments are then argv[optind..argc-1]. Ends the program on --help, --version and
 * any error. */
int cli_next(cli_parser* cli, int argc, char** argv);

/* Prints "TOOL: MESSAGE" and the usage on stderr and exits with status 2: a bad command line. */
__attribute__((noreturn, format(printf, 2, 3))) void cli_fail(const cli_parser* cli, const char* format, ...);

/* TEXT as an integer in [lo, hi] / a finite real > 0 (>= 0 with allow_zero); otherwise cli_fail naming
 * WHAT ("--epochs", "N") and TEXT. The cli_int / cli_real forms read the option cli_next just returned. */
long long cli_parse_int(const cli_parser* cli, const char* what, const char* text, long long lo, long long hi);
double cli_parse_real(const cli_parser* cli, const char* what, const char* text, int allow_zero);
long long cli_int(const cli_parser* cli, long long lo, long long hi);
double cli_real(const cli_parser* cli, int allow_zero);

#ifdef __cplusplus
}

/* TEXT split at commas ("cpu:0,cpu:1"); an empty item ends the program as a bad command line. */
inline std::vector<std::string> cli_list(const cli_parser& cli, std::string_view text) {
  std::vector<std::string> items;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    items.emplace_back(text.substr(at, comma - at));
    if (items.back().empty())
      cli_fail(&cli, "empty item in '%.*s' for %s", static_cast<int>(text.size()), text.data(), cli.name);
    at = comma + 1;
  }
  return items;
}

/* --weights of the data-parallel samples: "auto" (set *is_auto, clear weights) or one weight >= 0 per
 * device ("3,1"; a device may get no rows). */
inline void cli_weights(cli_parser& cli, std::vector<double>& weights, bool& is_auto) {
  is_auto = std::string_view(cli.value) == "auto";
  weights.clear();
  if (!is_auto)
    for (const std::string& w : cli_list(cli, cli.value))
      weights.push_back(cli_parse_real(&cli, cli.name, w.c_str(), 1));
}
#endif
