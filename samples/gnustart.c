/* The start-up and messages of a GNU program (coreutils style): locale and message catalogue set-up,
 * an exit handler, options parsed with getopt_long, messages through gettext and fprintf. One
 * stdin byte picks the message. Built with -D_FORTIFY_SOURCE=2 at -O2 (__fprintf_chk, __printf_chk). */
#include <getopt.h>
#include <libintl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int verbose;
static void bye(void) { }

int main(int argc, char **argv) {
    static const struct option longopts[] = {{"verbose", no_argument, NULL, 'v'}, {NULL, 0, NULL, 0}};
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (!setlocale(LC_ALL, "")) return 10;
    if (!bindtextdomain("gnustart", "/usr/share/locale")) return 11;
    if (!textdomain("gnustart")) return 12;
    if (atexit(bye) != 0) return 13;
    int c;
    while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
        if (c == 'v') verbose = 1;
        else { fprintf(stderr, gettext("usage: %s [-v]\n"), name); return 2; }
    }
    char b;
    if (read(0, &b, 1) != 1) return 3;
    if (b == 'h') printf(gettext("hello from %s\n"), strcmp(name, "gnustart_O0") && strcmp(name, "gnustart_O2") ? "?" : "me");
    else if (b == 'n') printf(ngettext("%d file\n", "%d files\n", 2), 2);
    else fprintf(stdout, dcgettext(NULL, "other %c\n", LC_MESSAGES), b >= 'a' && b <= 'z' ? 'l' : 'x');
    return verbose ? 4 : 0;
}
