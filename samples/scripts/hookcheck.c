/* An expensive character-by-character comparison that a script replaces with a hook on its call. */
#include <stdio.h>
#include <string.h>

#define LEN 12
static char password[LEN + 1] = "LKJHGFDSAPOI";

__attribute__((noinline)) int check_equals(const char *s, unsigned int n) {
    int same = 0;
    for (unsigned int i = 0; i < n; i++)
        if (s[i] == password[i])
            same++;
    return same == (int)n;
}

__attribute__((noinline)) void complex_function(char *s) {
    for (int i = 0; i < LEN; i++)
        s[i] = (char)('A' + (s[i] * 3 + 7 * i) % 26);
}

int main(void) {
    char buf[LEN + 1] = {0};
    printf("Enter the password: ");
    if (scanf("%12s", buf) != 1)
        return 2;
    complex_function(buf);
    if (check_equals(buf, LEN))
        puts("Good Job.");
    else
        puts("Try again.");
    return 0;
}
