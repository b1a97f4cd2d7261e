/* printf conversions with flags, widths and precisions, some taken from the arguments (*): the
   forms GNU programs print with (nl pads its line numbers with %*s), against glibc natively. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 9;
    const char *w = c & 1 ? "odd" : "even";
    printf("[%*s|%-*s|%6d|%-6d|%.2s|%.*s|%5s|%-5s|%*d|%06d|%.3d|%-3c|%3c]\n", 6, w, 7, w, 42, -7, w, 3, "abcdef", w, w, -4, 9, 12, 5, 'x', 'y');
    printf("%*s%s %ld %5.1s %%\n", 6, "", w, 1234567890123L, "zzz");
    return c & 1;
}
