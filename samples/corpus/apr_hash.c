/* APR (Debian's libapr-1.a): an apr_hash_t of 12 string keys in a pool, lookup of a two-byte key
 * from input (APR's times-33 hash, seeded from the clock and the table's address). */
#include <apr_general.h>
#include <apr_hash.h>
#include <apr_pools.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    apr_pool_t *pool;
    if (apr_initialize() != APR_SUCCESS || apr_pool_create(&pool, NULL) != APR_SUCCESS) return 5;
    apr_hash_t *h = apr_hash_make(pool);
    static const char *const keys[12] = {"a", "bx", "c", "dx", "e", "fx", "g", "hx", "i", "jx", "k", "lx"};
    static const long vals[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    for (int i = 0; i < 12; i++)
        apr_hash_set(h, keys[i], APR_HASH_KEY_STRING, &vals[i]);
    char key[3] = {(char)in[0], (char)in[1], 0};
    const long *v = apr_hash_get(h, key, APR_HASH_KEY_STRING);
    if (v == NULL) return 2;
    return *v <= 6 ? 3 : 4;
}
