/* APR (Debian's libapr-1.a): a hash table of N int keys (default 15), each key its own malloc'd
 * int, one concrete lookup, then two lookups of 4-byte keys read from stdin: the seeds' APR
 * subject. Prints the value found by each lookup (or -); exits with how many were found. */
#include <apr_general.h>
#include <apr_hash.h>
#include <apr_pools.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 15;
    if (apr_initialize() != APR_SUCCESS)
        return 99;
    apr_pool_t *pool;
    if (apr_pool_create(&pool, NULL) != APR_SUCCESS)
        return 98;
    apr_hash_t *table = apr_hash_make(pool);
    for (int i = 0; i < n; i++) {
        int *key = malloc(sizeof *key);
        *key = i;
        apr_hash_set(table, key, sizeof *key, key);
    }
    int zero = 0;
    if (n > 0 && apr_hash_get(table, &zero, sizeof zero) == NULL)
        return 97;
    int keys[2];
    if (read(0, keys, sizeof keys) != sizeof keys)
        return 96;
    int found = 0;
    for (int k = 0; k < 2; k++) {
        int *v = apr_hash_get(table, &keys[k], sizeof keys[k]);
        if (v) {
            printf("%d\n", *v);
            found++;
        } else {
            puts("-");
        }
    }
    return found;
}
