/* strspn, strcspn and strtok written from their description in the C standard (7.24.5), over a
 * two-byte input string. */
#include <stddef.h>
#include <unistd.h>
static size_t my_strspn(const char *s1, const char *s2) {
    size_t n = 0;
    for (; s1[n]; n++) {
        const char *p = s2;
        while (*p && *p != s1[n]) p++;
        if (!*p) break;
    }
    return n;
}
static size_t my_strcspn(const char *s1, const char *s2) {
    size_t n = 0;
    for (; s1[n]; n++)
        for (const char *p = s2; *p; p++)
            if (*p == s1[n]) return n;
    return n;
}
static char *my_strtok(char *s1, const char *s2) {
    static char *save;
    if (!s1) s1 = save;
    s1 += my_strspn(s1, s2);
    if (!*s1) return NULL;
    char *end = s1 + my_strcspn(s1, s2);
    if (*end) *end++ = 0;
    save = end;
    return s1;
}
int main(void) {
    char buf[3] = {0, 0, 0};
    if (read(0, buf, 2) != 2) return 1;
    int tokens = 0;
    for (char *t = my_strtok(buf, " ,"); t; t = my_strtok(NULL, " ,")) tokens++;
    return 10 + tokens * 3 + (int)my_strspn(buf, "ab");
}
