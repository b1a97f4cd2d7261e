/* libyaml (Debian's libyaml.a): the scanner over the input, as the seeds' libyaml driver runs it.
 * Prints one letter per token type; exits with the token count, or 100 + the parser's error. */
#include <stdio.h>
#include <unistd.h>
#include <yaml.h>

int main(void) {
    unsigned char buf[64];
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0)
        n = 0;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return 99;
    yaml_parser_set_input_string(&parser, buf, (size_t)n);
    int count = 0, failed = 0;
    for (;;) {
        yaml_token_t token;
        if (!yaml_parser_scan(&parser, &token)) {
            failed = 1;
            break;
        }
        int type = token.type;
        yaml_token_delete(&token);
        putchar('a' + type);
        count++;
        if (type == YAML_STREAM_END_TOKEN || count >= 32)
            break;
    }
    putchar('\n');
    int code = failed ? 100 + (int)parser.error : count;
    yaml_parser_delete(&parser);
    return code;
}
