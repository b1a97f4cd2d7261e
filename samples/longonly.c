/* getopt_long_only: long options after a single dash (-alpha, -beta=3), unique prefixes (-al),
 * short options where no long name matches (-a, -bx, -ab q), unknown ones (-z). Prints each
 * option as parsed and how many non-options are left. */
#include <getopt.h>
#include <stdio.h>

static const struct option longopts[] = {
    {"alpha", no_argument, NULL, 'A'},
    {"beta", required_argument, NULL, 'B'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv) {
    int c, n = 0;
    while ((c = getopt_long_only(argc, argv, "ab:", longopts, NULL)) != -1)
        printf("%d:%c%s ", n++, c, optarg ? optarg : "");
    printf("| %d\n", argc - optind);
    return 0;
}
