/* A command-line tool's option check with glibc's error(3): a bad option ends the program with a
 * message on stderr and exit status 3; error() with status 0 only warns and returns. */
#include <error.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    unsigned char c;
    if (read(0, &c, 1) != 1) error(4, 0, "no input");
    if (c == 'x') error(3, 0, "unknown option '%c'", c);
    if (c == 'w') error(0, 0, "warning: option %c is deprecated", c);
    puts(c == 'a' ? "all" : "default");
    return c == 'w' ? 1 : 0;
}
