/* A symbol table keyed by a hash of a four-byte name: the name's entry goes into the bucket its
   hash selects, then the whole table is walked (as a destructor or a statistics pass walks it):
   every bucket is "the entry or NULL", by the name, and the walk reads and writes the entry's
   fields through the bucket pointer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef BUCKETS
#define BUCKETS 8
#endif

struct entry {
    char name[8];
    unsigned len;
    unsigned visits;
    struct entry *next;
};

static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t name_hash(const unsigned char *s, int n) {
    uint32_t a = 0x736f6d65u, b = 0x646f7261u, c = 0x6c796765u;
    for (int i = 0; i < n; i++) {
        a += s[i];
        b ^= a; b = rotl(b, 13); c += b;
        a ^= c; a = rotl(a, 7);  b += a;
        c ^= b; c = rotl(c, 17); a += c;
    }
    return a ^ b ^ c;
}

int main(void) {
    unsigned char name[4];
    if (read(0, name, sizeof name) != sizeof name) return 2;
    struct entry **table = calloc(BUCKETS, sizeof *table);
    struct entry *e = calloc(1, sizeof *e);
    if (!table || !e) return 3;
    for (int i = 0; i < 4; i++) e->name[i] = (char)name[i];
    e->len = 4;
    uint32_t h = name_hash(name, 4);
    table[h % BUCKETS] = e;
    unsigned total = 0, used = 0;
    for (int i = 0; i < BUCKETS; i++) {
        struct entry *p = table[i];
        if (!p) continue;
        p->visits++;
        total += p->len + p->visits;
        used++;
        for (struct entry *q = p->next; q; q = q->next) total += q->len;
    }
    printf("%u %u\n", used, total);
    return (int)(h & 1);
}
