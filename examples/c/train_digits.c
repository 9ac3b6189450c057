/* Training steps of examples/digits_mlp.weft from C: the model's variables live inside weft
 * and are updated by every run; C reads and writes them through weft.h.
 *
 *   train_digits MODEL.weft STEPS
 *
 * Sets b1 to zeros, runs STEPS steps on a fixed synthetic batch (x[B, P], labels[B]), prints
 * each step's loss, then the final b2, one value per line. See docs/c-api.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, weft_last_error());
    return 1;
}

/* The index of the variable called `name`, or -1. */
static long variable(const weft_model *model, const char *name, weft_tensor_info *info) {
    for (size_t i = 0; i < weft_model_variable_count(model); i++) {
        if (weft_model_variable(model, i, info) == WEFT_OK && strcmp(info->name, name) == 0)
            return (long)i;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.weft STEPS\n", argv[0]);
        return 2;
    }
    int steps = atoi(argv[2]);
    weft_context *context = NULL;
    weft_model *model = NULL;
    if (weft_context_create(0, 0, &context) != WEFT_OK) return fail("context");
    if (weft_model_load(context, argv[1], NULL, 0, &model) != WEFT_OK) return fail("load");

    /* x: f32[B, P] and labels: i64[B]. */
    weft_tensor_info x_info, l_info;
    if (weft_model_input(model, 0, &x_info) != WEFT_OK) return fail("input x");
    if (weft_model_input(model, 1, &l_info) != WEFT_OK) return fail("input labels");
    float *x = malloc(x_info.bytes);
    int64_t *labels = malloc(l_info.bytes);
    for (size_t e = 0; e < x_info.elements; e++) x[e] = (float)(e * 5 % 17) / 16.0f;
    for (size_t b = 0; b < l_info.elements; b++) labels[b] = (int64_t)(b % 10);
    weft_buffer inputs[2] = {{x, x_info.bytes}, {labels, l_info.bytes}};

    /* Outputs: the loss, then the updated parameters. */
    size_t n_out = weft_model_output_count(model);
    weft_buffer *outputs = calloc(n_out, sizeof *outputs);
    for (size_t o = 0; o < n_out; o++) {
        weft_tensor_info info;
        if (weft_model_output(model, o, &info) != WEFT_OK) return fail("output");
        outputs[o] = (weft_buffer){malloc(info.bytes), info.bytes};
    }

    weft_tensor_info b1_info, b2_info;
    long b1 = variable(model, "b1", &b1_info), b2 = variable(model, "b2", &b2_info);
    if (b1 < 0 || b2 < 0) {
        fprintf(stderr, "no variables b1 and b2\n");
        return 1;
    }
    float *zeros = calloc(b1_info.elements, sizeof(float));
    if (weft_model_write_variable(model, (size_t)b1, (weft_buffer){zeros, b1_info.bytes}) !=
        WEFT_OK)
        return fail("write b1");

    for (int s = 0; s < steps; s++) {
        if (weft_model_run(model, inputs, 2, outputs, n_out) != WEFT_OK) return fail("run");
        printf("loss %.9g\n", *(float *)outputs[0].data);
    }
    float *bias = malloc(b2_info.bytes);
    if (weft_model_read_variable(model, (size_t)b2, (weft_buffer){bias, b2_info.bytes}) !=
        WEFT_OK)
        return fail("read b2");
    for (size_t e = 0; e < b2_info.elements; e++) printf("b2 %.9g\n", bias[e]);

    /* A wrong size is refused with a message, not a crash. */
    if (weft_model_read_variable(model, (size_t)b2, (weft_buffer){bias, 1}) == WEFT_OK)
        return 1;
    printf("refused: %s\n", weft_last_error());

    for (size_t o = 0; o < n_out; o++) free(outputs[o].data);
    free(outputs);
    free(bias);
    free(zeros);
    free(x);
    free(labels);
    weft_model_destroy(model);
    weft_context_destroy(context);
    return 0;
}
