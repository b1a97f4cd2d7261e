/* uthash (Debian's uthash-dev): 24 entries keyed by int, HASH_FIND_INT of a key read from input. */
#include <stdlib.h>
#include <unistd.h>
#include <uthash.h>
struct item { int key; int value; UT_hash_handle hh; };
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    struct item *table = NULL;
    for (int i = 0; i < 24; i++) {
        struct item *it = malloc(sizeof *it);
        it->key = i * 37 + 5;
        it->value = i;
        HASH_ADD_INT(table, key, it);
    }
    int key = in[0] | (in[1] << 8);
    struct item *found;
    HASH_FIND_INT(table, &key, found);
    if (!found) return 2;
    return found->value < 12 ? 3 : 4;
}
