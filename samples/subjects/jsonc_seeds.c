/* json-c (Debian's libjson-c.a): an object with keys "a".."d" added one by one; after each add, a
 * lookup of a 1-byte key read from stdin (the seeds' json-c subject: 4 symbolic lookups). Prints a
 * letter per lookup, the value's (or '-'), and exits with how many were found. */
#include <json-c/json.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    char keys[4];
    if (read(0, keys, sizeof keys) != sizeof keys)
        return 99;
    json_object *obj = json_object_new_object();
    int found = 0;
    for (int i = 0; i < 4; i++) {
        char name[2] = {(char)('a' + i), 0};
        json_object_object_add(obj, name, json_object_new_int(i));
        char key[2] = {keys[i], 0};
        json_object *v = json_object_object_get(obj, key);
        if (v) {
            putchar('0' + json_object_get_int(v));
            found++;
        } else {
            putchar('-');
        }
    }
    putchar('\n');
    json_object_put(obj);
    return found;
}
