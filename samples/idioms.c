/* Binary idioms on heap pointers, one per value of the first input byte (mod 8); the second byte
 * is the data. Every idiom is memory-safe for every input: an error path is a false error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node { struct node *next; int v; };

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
/* insertion sort and binary search with the C standard's qsort/bsearch interfaces */
static void my_qsort(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *)) {
    char *b = base, tmp[16];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(b + (j - 1) * sz, b + j * sz) > 0; j--) {
            memcpy(tmp, b + j * sz, sz);
            memcpy(b + j * sz, b + (j - 1) * sz, sz);
            memcpy(b + (j - 1) * sz, tmp, sz);
        }
}
static void *my_bsearch(const void *key, const void *base, size_t n, size_t sz,
                        int (*cmp)(const void *, const void *)) {
    const char *b = base;
    while (n > 0) {
        const char *mid = b + (n / 2) * sz;
        int c = cmp(key, mid);
        if (c == 0) return (void *)mid;
        if (c > 0) { b = mid + sz; n -= n / 2 + 1; } else n /= 2;
    }
    return NULL;
}

int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    unsigned d = in[1];
    switch (in[0] & 7) {
    case 0: {   /* alignment: round a pointer up, test low bits */
        char *p = malloc(40);
        uintptr_t a = ((uintptr_t)p + 7) & ~(uintptr_t)7;
        if ((uintptr_t)p & 15) return 20;          /* malloc returns 16-aligned memory */
        char *q = (char *)a + (d & 31);
        *q = 1;
        return 21 + (q - p > 16);
    }
    case 1: {   /* hashing a pointer: bucket = (p >> 4) & 7, same bucket for the same pointer */
        char *objs[4];
        for (int i = 0; i < 4; i++) objs[i] = malloc(24);
        char *p = objs[d & 3];
        unsigned h1 = ((uintptr_t)p >> 4) & 7, h2 = ((uintptr_t)objs[d & 3] >> 4) & 7;
        return h1 == h2 ? 23 : 24;
    }
    case 2: {   /* pointer difference and comparison inside one object and between two */
        int *a = malloc(16 * sizeof(int)), *b = malloc(16 * sizeof(int));
        int *e = a + (d & 15);
        if (e - a != (int)(d & 15)) return 25;
        if (a == b) return 26;
        return e < a + 8 ? 27 : 28;
    }
    case 3: {   /* realloc moves the data */
        unsigned char *p = malloc(8);
        for (int i = 0; i < 8; i++) p[i] = (unsigned char)(d + i);
        p = realloc(p, 64);
        p[63] = 5;
        return p[d & 7] == (unsigned char)(d + (d & 7)) ? 29 : 30;
    }
    case 4: {   /* qsort and bsearch with callbacks over a heap array */
        int *arr = malloc(5 * sizeof(int));
        int vals[5] = {40, 10, 30, 20, 50};
        memcpy(arr, vals, sizeof vals);
        my_qsort(arr, 5, sizeof(int), cmp_int);
        int key = (int)(d & 63);
        int *hit = my_bsearch(&key, arr, 5, sizeof(int), cmp_int);
        return hit ? 31 + (int)(hit - arr) : 36;
    }
    case 5: {   /* a linked list built at the head, walked to the d-th node */
        struct node *head = NULL;
        for (int i = 0; i < 6; i++) {
            struct node *n = malloc(sizeof *n);
            n->v = i * 3;
            n->next = head;
            head = n;
        }
        struct node *n = head;
        for (unsigned k = 0; k < (d & 7) && n; k++) n = n->next;
        return n ? 37 + (n->v > 6) : 39;
    }
    case 6: {   /* memset, strlen and memcmp on a heap buffer */
        char *s = malloc(64);
        memset(s, 'x', 63);
        s[63] = 0;
        s[d & 63] = 0;
        size_t n = strlen(s);
        return memcmp(s, "xxxx", 4) == 0 ? (n < 32 ? 40 : 41) : 42;
    }
    default: {  /* a copy loop gcc turns into rep movs / vector moves, then a scan */
        unsigned char *src = malloc(256), *dst = malloc(256);
        for (int i = 0; i < 256; i++) src[i] = (unsigned char)i;
        memcpy(dst, src, 256);
        unsigned char *hit = memchr(dst, (int)d, 256);
        return hit && hit - dst == (int)d ? 43 : 44;
    }
    }
}
