/* Formats built from input bytes, the way GNU printf builds one per directive: a conversion byte
 * known only to be one of four, and a byte that may or may not start a conversion. */
#include <stdint.h>
#include <stdio.h>

int main(void) {
    int c = getchar(), d = getchar();
    char conv[8] = "%j?|";
    switch (c) {
    case 'o': case 'u': case 'x': case 'X':
        conv[2] = (char)c;
        printf(conv, (uintmax_t)10);
        break;
    default:
        puts("not a conversion");
    }
    if (d == '\n' || d == EOF || d == 0) return 1;
    char text[4] = {(char)d, 'd', '\n', 0};
    printf(text, 42);
    return 0;
}
