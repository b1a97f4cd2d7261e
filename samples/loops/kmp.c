/* Knuth-Morris-Pratt search for "abab" with its failure table built at run time. Exit: position
 * of the first match, 200 if none. */
#include "harness.h"
int main(void) {
    char buf[M + 1]; size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    const char *pat = "abab";
    int fail[4], k = 0;
    fail[0] = 0;
    for (int i = 1; i < 4; i++) {
        while (k > 0 && pat[i] != pat[k]) k = fail[k - 1];
        if (pat[i] == pat[k]) k++;
        fail[i] = k;
    }
    int q = 0;
    for (size_t i = 0; i < n; i++) {
        while (q > 0 && buf[i] != pat[q]) q = fail[q - 1];
        if (buf[i] == pat[q]) q++;
        if (q == 4) return (int)(i - 3);
    }
    return 200;
}
