/* glib (Debian's libglib-2.0.a): a GHashTable of 12 string keys (g_str_hash, g_str_equal), lookup
 * of a two-byte key from input. */
#include <glib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
    static const char *const keys[12] = {"a", "bx", "c", "dx", "e", "fx", "g", "hx", "i", "jx", "k", "lx"};
    for (long i = 0; i < 12; i++)
        g_hash_table_insert(t, (gpointer)keys[i], (gpointer)(i + 1));
    char key[3] = {(char)in[0], (char)in[1], 0};
    long v = (long)g_hash_table_lookup(t, key);
    if (v == 0) return 2;
    return v <= 6 ? 3 : 4;
}
