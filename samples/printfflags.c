/* printf's flags as C99 defines them (7.19.6.1): '+' and ' ' signs, '#' forms (0x, a leading 0,
   none for 0), '0' padding after the sign, precisions as least digits (none for 0 at .0), and
   %.Ns of an array without a NUL (read no further than N bytes). Against glibc natively. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 9;
    printf("[%+d|% d|%+d|%#x|%#X|%#o|%#o|%#x|%05d|%.3d|%5.3d|%-+5d|%.0d|%#.0o|%+u|%+5s|%-05d|% 05d]\n",
           5, 5, -5, 31, 31, 8, 0, 0, -42, -7, 7, 3, 0, 0, 9u, "ab", -3, 4);
    int n = (c & 3) + 1;
    char *word = malloc(n);             /* n letters and no NUL */
    memset(word, 'a' + (c & 7), n);
    char *four = malloc(4);
    memcpy(four, "wxyz", 4);
    printf("<%.*s|%.3s|%.4s|%.9s>\n", n, word, four, four, "short");
    int v = (int)c - 10;
    printf("%#x|%+d|% 4d|%.0d|%#o|%#.3x|%-#6x|%+05d\n", c, v, v, c, c, c, c, v);
    free(word);
    free(four);
    return c & 1;
}
