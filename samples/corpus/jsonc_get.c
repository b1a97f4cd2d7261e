/* json-c (Debian's libjson-c.a): an object with 12 members, lookup of a two-byte key from input. */
#include <stdio.h>
#include <unistd.h>
#include <json-c/json.h>
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    struct json_object *obj = json_object_new_object();
    char k[3] = {0, 0, 0};
    for (int i = 0; i < 12; i++) {
        k[0] = 'a' + i;
        k[1] = (i & 1) ? 'x' : 0;
        json_object_object_add(obj, k, json_object_new_int(i));
    }
    char key[3] = {(char)in[0], (char)in[1], 0};
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v)) return 2;
    return json_object_get_int(v) < 6 ? 3 : 4;
}
