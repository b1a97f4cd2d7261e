/* A format string picked by the input: a printable byte as itself, any other as a three-digit octal
   escape, the choice made without a branch at -O2 (a conditional move: a pointer that is one of two
   format strings), the way Debian's od -c formats its characters. */
#include <ctype.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1)
        return 9;
    char out[8];
    int n = sprintf(out, isprint(c) ? "[%c]" : "\\%03o", c);
    printf("%s %d\n", out, n);
    return isprint(c) ? 1 : 2;
}
