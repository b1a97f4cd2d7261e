/* A tokenizer that peeks (C11 7.21.7.10 ungetc): a run of digits or of letters ends at the first
 * other byte, which is pushed back with ungetc and read again by the next token; prints the
 * numbers and words it counted. */
#include <ctype.h>
#include <stdio.h>

static int run(int (*in_class)(int)) {
    int c;
    while ((c = getc(stdin)) != EOF && in_class(c))
        ;
    if (c != EOF)
        ungetc(c, stdin);
    return 1;
}

int main(void) {
    int c, numbers = 0, words = 0, others = 0;
    while ((c = getchar()) != EOF) {
        if (isdigit(c))
            numbers += run(isdigit);
        else if (isalpha(c))
            words += run(isalpha);
        else
            others++;
    }
    printf("%d %d %d\n", numbers, words, others);
    return numbers > words;
}
