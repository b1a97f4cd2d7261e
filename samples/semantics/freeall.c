/* Destroying a hash table: free() of every bucket of a calloc'd table, one of which holds the entry
   the input hashed to (each bucket is "that entry or NULL", by the input); then the inputs from 60
   up read the entry again, after it was freed. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BUCKETS 16

int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    char **table = calloc(BUCKETS, sizeof *table);
    char *entry = malloc(4);
    if (!table || !entry) return 3;
    entry[0] = (char)('a' + c % 26);
    entry[1] = 0;
    unsigned h = (c * 7u + 3u) % BUCKETS;
    table[h] = entry;
    int used = 0;
    for (int i = 0; i < BUCKETS; i++) used += table[i] != NULL;
    for (int i = 0; i < BUCKETS; i++) free(table[i]);
    free(table);
    if (c >= 60) return entry[0] == 'a' ? 5 : 6;
    printf("%d\n", used);
    return (int)(h & 1);
}
