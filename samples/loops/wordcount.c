/* A wc-style state machine: words are maximal runs of characters that are not white space.
 * Exit: words * 16 + lines. */
#include "harness.h"

__attribute__((noinline)) int wordcount(const char *s, int *lines) {
    int words = 0, in_word = 0;
    *lines = 0;
    for (; *s; s++) {
        if (*s == '\n') (*lines)++;
        if (*s == ' ' || *s == '\n' || *s == '\t') {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            words++;
        }
    }
    return words;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    int lines;
    int words = wordcount(buf, &lines);
    return words * 16 + lines;
}
