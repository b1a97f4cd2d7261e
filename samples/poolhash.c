/* An APR-style hash table on a memory pool: every object of the program (request buffer, bucket
 * array, entries) comes from one allocation function, so all objects share one allocation site,
 * as in programs built on apr_palloc or xmalloc. After 10 inserts, a lookup of a symbolic key
 * (stdin: 1 byte). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define BUCKETS 16
#define REQUEST 1024
typedef struct entry { struct entry *next; unsigned key; long value; } entry_t;

static void *pool_alloc(size_t n) {
    void *p = malloc(n);
    if (!p) exit(3);
    memset(p, 0, n);
    return p;
}
static unsigned hashfn(unsigned k) { return (k * 31u + 7u) % BUCKETS; }

int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    char *request = pool_alloc(REQUEST);
    const char *line = "GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n";
    for (unsigned i = 0; line[i]; i++) request[i] = line[i];
    entry_t **buckets = pool_alloc(BUCKETS * sizeof *buckets);
    for (unsigned i = 0; i < 10; i++) {
        entry_t *e = pool_alloc(sizeof *e);
        e->key = i * 7 + 1;
        e->value = 100 + i;
        unsigned b = hashfn(e->key);
        e->next = buckets[b];
        buckets[b] = e;
    }
    for (entry_t *e = buckets[hashfn(c)]; e; e = e->next)
        if (e->key == c) {
            printf("%ld\n", e->value);
            return 1;
        }
    return 0;
}
