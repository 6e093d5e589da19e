/* cli.h: one getopt_long loop, its messages and the number parsing, for every tool and sample. */
#include "cli.h"

#include <braid.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cli_parser cli_parser_init(const char* tool, const char* usage, const char* help, const struct option* options) {
  cli_parser cli;
  memset(&cli, 0, sizeof cli);
  cli.tool = tool;
  cli.usage = usage;
  cli.help = help;
  cli.options = options;
  return cli;
}

void cli_fail(const cli_parser* cli, const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "%s: ", cli->tool);
  vfprintf(stderr, format, args);
  va_end(args);
  fprintf(stderr, "\n%s", cli->usage);
  exit(2);
}

/* Remembers "--NAME" (the first len characters of name) for the messages. */
static void set_name(cli_parser* cli, const char* name, size_t len) {
  snprintf(cli->name_buffer, sizeof cli->name_buffer, "--%.*s", (int)len, name);
  cli->name = cli->name_buffer;
}

static const struct option* option_with_value(const cli_parser* cli, int val) {
  for (const struct option* o = cli->options; o->name; ++o)
    if (o->val == val) return o;
  return NULL;
}

/* ARG ("--ba" or "--ba=x") names no option: getopt_long says only '?', so tell an unknown name from
 * a prefix that fits several options. */
static void fail_unknown(cli_parser* cli, const char* arg) {
  const size_t len = strcspn(arg + 2, "=");
  set_name(cli, arg + 2, len);
  int fits = 0;
  for (const struct option* o = cli->options; o->name; ++o) fits += strncmp(o->name, arg + 2, len) == 0;
  cli_fail(cli, "%s option '%s'", fits > 1 ? "ambiguous" : "unknown", cli->name);
}

/* getopt_long said '?': an unknown short option (optopt is its character), an unknown or ambiguous
 * long one (optopt 0), or a long option without a value that was given one (optopt is its value). */
static void fail_refused(cli_parser* cli, char** argv) {
  if (optopt == 0) fail_unknown(cli, argv[optind - 1]);
  const struct option* o =
      optopt == CLI_HELP || optopt > UCHAR_MAX || (cli->short_options && strchr(cli->short_options, optopt))
          ? option_with_value(cli, optopt)
          : NULL;
  if (!o) cli_fail(cli, "unknown option '-%c'", optopt);
  set_name(cli, o->name, strlen(o->name));
  cli_fail(cli, "option '%s' takes no value", cli->name);
}

int cli_next(cli_parser* cli, int argc, char** argv) {
  opterr = 0; /* the messages below name the option and end with the usage */
  int index = -1;
  /* ':' first (after a '+'): a missing value comes back as ':', told apart from an unknown option ('?'). */
  char shorts[64] = ":h";
  if (cli->short_options) {
    const char* extra = cli->short_options;
    const int in_order = extra[0] == '+';
    snprintf(shorts, sizeof shorts, "%s:h%s", in_order ? "+" : "", extra + in_order);
  }
  const int opt = getopt_long(argc, argv, shorts, cli->options, &index);
  if (opt == -1) return -1;
  cli->name = NULL;
  cli->value = optarg;
  if (opt == '?') fail_refused(cli, argv);
  if (opt == ':') {
    const struct option* o = option_with_value(cli, optopt);
    set_name(cli, o ? o->name : "?", o ? strlen(o->name) : 1);
    cli_fail(cli, "option '%s' needs a value", cli->name);
  }
  if (index >= 0) set_name(cli, cli->options[index].name, strlen(cli->options[index].name));
  if (index < 0 && opt != CLI_HELP && opt != ':') {
    const struct option* o = option_with_value(cli, opt); /* a short option: named by its long form */
    if (o) set_name(cli, o->name, strlen(o->name));
  }
  /* `--epochs --json` would take "--json" as the number of epochs: a separate value that looks like
   * an option is a forgotten one (`--opt=--x` still passes such a value on purpose). */
  if (cli->value && cli->value == argv[optind - 1] && strncmp(cli->value, "--", 2) == 0)
    cli_fail(cli, "option '%s' needs a value", cli->name);
  if (opt == CLI_HELP) {
    fputs(cli->usage, stdout);
    if (cli->help) fputs(cli->help, stdout);
    exit(0);
  }
  if (opt == CLI_VERSION) {
    printf("%s %s\n", cli->tool, braid_version_string());
    exit(0);
  }
  return opt;
}

long long cli_parse_int(const cli_parser* cli, const char* what, const char* text, long long lo, long long hi) {
  char* end = NULL;
  errno = 0;
  const long long n = strtoll(text, &end, 10);
  if (*text != '\0' && *end == '\0' && errno == 0 && n >= lo && n <= hi) return n;
  if (hi == LLONG_MAX) cli_fail(cli, "bad value '%s' for %s: expected an integer >= %lld", text, what, lo);
  cli_fail(cli, "bad value '%s' for %s: expected an integer from %lld to %lld", text, what, lo, hi);
}

double cli_parse_real(const cli_parser* cli, const char* what, const char* text, int allow_zero) {
  char* end = NULL;
  const double x = strtod(text, &end);
  if (*text != '\0' && *end == '\0' && isfinite(x) && (x > 0 || (allow_zero && x == 0))) return x;
  cli_fail(cli, "bad value '%s' for %s: expected a number %s 0", text, what, allow_zero ? ">=" : ">");
}

long long cli_int(const cli_parser* cli, long long lo, long long hi) {
  return cli_parse_int(cli, cli->name, cli->value, lo, hi);
}

double cli_real(const cli_parser* cli, int allow_zero) {
  return cli_parse_real(cli, cli->name, cli->value, allow_zero);
}
