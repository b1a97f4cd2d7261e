/* libc string comparisons on heap copies of input bytes: strlen, strcmp against a key chosen by an
 * input byte (a pointer that selects among heap strings), strncmp, strnlen, memcmp. Four bytes of
 * stdin; the exit code packs the results. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const words[4] = {"ab", "a", "abc", ""};

static char *copy(const char *w, size_t n) {
    char *p = malloc(n + 1);
    memcpy(p, w, n);
    p[n] = 0;
    return p;
}

int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4) return 100;
    char *s = copy((const char *)in, 3);            /* up to three input bytes, then NUL */
    char *keys[4];
    for (int i = 0; i < 4; i++) keys[i] = copy(words[i], strlen(words[i]));
    int r = (int)strlen(s);                          /* bits 0-1: 0..3 */
    int c = strcmp(s, keys[in[3] & 3]);              /* key chosen by the fourth byte */
    r |= (c < 0 ? 1 : c == 0 ? 2 : 3) << 2;          /* bits 2-3 */
    if (strncmp(keys[0], s, 2) == 0) r |= 16;
    if (memcmp(in, "ba", 2) > 0) r |= 32;
    if (strnlen(s, 2) == 2) r |= 64;
    return r;
}
