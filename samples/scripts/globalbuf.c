/* The input is read into a global buffer, transformed in place and compared: a script starts after
 * the read with a blank state and stores symbolic bytes into the buffer itself. */
#include <stdio.h>
#include <string.h>

char input[17];

__attribute__((noinline)) void scramble(char *s) {
    for (int i = 0; i < 16; i++)
        s[i] = (char)(((s[i] - 'A' + 7 * i) % 26) + 'A');
}

int main(void) {
    printf("Enter the password: ");
    scanf("%16s", input);
    scramble(input);
    if (strncmp(input, "QZJBHPSHGPXRHNTF", 16) == 0)
        puts("Good Job.");
    else
        puts("Try again.");
    return 0;
}
