/* qsort as programs use it: the input's bytes sorted by a comparison function of the program's
 * (ascending), then records (a key byte and the position it came from) sorted by key alone, so
 * equal keys show whether the sort is stable (glibc's is), then qsort_r with a direction given
 * through its argument. Prints each result. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec { unsigned char key; int pos; };

static int by_byte(const void *a, const void *b) {
    return *(const unsigned char *)a - *(const unsigned char *)b;
}

static int by_key(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_direction(const void *a, const void *b, void *dir) {
    int d = *(int *)dir;
    return d * (*(const unsigned char *)a - *(const unsigned char *)b);
}

int main(void) {
    unsigned char in[8];
    size_t n = fread(in, 1, sizeof in, stdin);
    unsigned char s[8];
    memcpy(s, in, n);
    qsort(s, n, 1, by_byte);
    fwrite(s, 1, n, stdout);
    putchar('\n');
    struct rec r[8];
    for (size_t i = 0; i < n; i++) {
        r[i].key = in[i] & 3;          /* few keys: equal ones keep their order */
        r[i].pos = (int)i;
    }
    qsort(r, n, sizeof r[0], by_key);
    for (size_t i = 0; i < n; i++)
        printf("%d%d ", r[i].key, r[i].pos);
    putchar('\n');
    int down = -1;
    qsort_r(s, n, 1, by_direction, &down);
    fwrite(s, 1, n, stdout);
    putchar('\n');
    return s[0] > s[n > 0 ? n - 1 : 0];
}
