/* Command-line options as GNU programs parse them: getopt_long with short options grouped or
 * apart, required (-n 3, -n3, --count=3, --count 3) and optional (-v, -v2, --verbose=2) arguments,
 * a flag set through the long-option table (--quiet), unique prefixes of long options (--cou=2),
 * unknown options and missing arguments ('?', ':'), "--", and non-options moved after the
 * options (GNU's default order). One byte of stdin is added to the count; stdout shows what was
 * parsed, the exit code how parsing ended. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int quiet;

static const struct option longopts[] = {
    {"count", required_argument, NULL, 'n'},
    {"verbose", optional_argument, NULL, 'v'},
    {"quiet", no_argument, &quiet, 1},
    {"country", no_argument, NULL, 'C'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv) {
    int count = 0, verbose = 0, a = 0, b = 0, bad = 0, c, idx = -1;
    while ((c = getopt_long(argc, argv, ":abn:v::h", longopts, &idx)) != -1) {
        switch (c) {
        case 0: printf("flag %s\n", longopts[idx].name); break;
        case 'a': a++; break;
        case 'b': b++; break;
        case 'n': count = atoi(optarg); break;
        case 'v': verbose = optarg ? atoi(optarg) : 1; break;
        case 'C': printf("country\n"); break;
        case 'h': printf("usage\n"); return 0;
        case ':': printf("missing %c\n", optopt); bad |= 1; break;
        case '?': printf("unknown %c\n", optopt ? optopt : '-'); bad |= 2; break;
        }
    }
    int in = getchar();
    if (in != EOF) count += in & 3;
    printf("a=%d b=%d n=%d v=%d q=%d rest=%d", a, b, count, verbose, quiet, argc - optind);
    for (int i = optind; i < argc; i++) printf(" %s", argv[i]);
    printf("\n");
    return bad ? 10 + bad : (count > 4) + 2 * (verbose > 1);
}
