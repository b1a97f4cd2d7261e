/* A word counter over stdin read in one fread: every byte is a space or not, so every path reads
 * its last byte in the same step (a breadth-first frontier finishes all of them together). A word
 * of four or more bytes is reported by its own function (a find target). */
#include <ctype.h>
#include <stdio.h>

__attribute__((noinline)) static void long_word(int len) {
    printf("long word (%d bytes)\n", len);
}

int main(void) {
    char buf[64];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    int words = 0, len = 0, reported = 0;
    for (size_t i = 0; i < n; i++) {
        if (isspace((unsigned char)buf[i])) {
            len = 0;
            continue;
        }
        if (len++ == 0)
            words++;
        if (len == 4 && !reported) {
            long_word(len);
            reported = 1;
        }
    }
    printf("%d words\n", words);
    return 0;
}
