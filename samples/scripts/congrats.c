/* The first crackme of a reverse-engineering course, as angr's documentation explores it: a word
 * read with scanf and compared with strcmp. */
#include <stdio.h>
#include <string.h>

int main(void) {
    char word[32];
    printf("Enter password: ");
    if (scanf("%31s", word) != 1)
        return 1;
    if (strcmp(word, "g00dJ0B!") == 0) {
        puts("Congrats!");
        return 0;
    }
    puts("Wrong!");
    return 1;
}
