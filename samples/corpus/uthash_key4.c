/* uthash (Debian's uthash-dev): 24 entries keyed by scattered 32-bit ints, HASH_FIND_INT of a
 * four-byte key read from input (2^32 keys: no input enumeration, the hash must not be inverted). */
#include <stdlib.h>
#include <unistd.h>
#include <uthash.h>
struct item { int key; int value; UT_hash_handle hh; };
int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4) return 1;
    struct item *table = NULL;
    unsigned int k = 0x12345678u;
    for (int i = 0; i < 24; i++) {
        struct item *it = malloc(sizeof *it);
        k = k * 1103515245u + 12345u;
        it->key = (int)k;
        it->value = i;
        HASH_ADD_INT(table, key, it);
    }
    int key = in[0] | (in[1] << 8) | (in[2] << 16) | ((unsigned)in[3] << 24);
    struct item *found;
    HASH_FIND_INT(table, &key, found);
    if (!found) return 2;
    return found->value < 12 ? 3 : 4;
}
