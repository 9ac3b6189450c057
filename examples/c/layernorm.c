/* The layer norm of examples/layernorm.weft, called from C through weft.h.
 *
 *   layernorm MODEL.weft [AXIS=LEN ...]
 *
 * Loads and compiles the model once, fills its inputs a[R, C], g[C] and b[C] with fixed values,
 * runs it three times and prints the output, one element per line. See docs/c-api.md. */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, weft_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.weft [AXIS=LEN ...]\n", argv[0]);
        return 2;
    }
    weft_context *context = NULL;
    if (weft_context_create(0, 0, &context) != WEFT_OK) return fail("context");
    weft_model *model = NULL;
    if (weft_model_load(context, argv[1], (const char *const *)argv + 2, (size_t)(argc - 2),
                        &model) != WEFT_OK) {
        weft_context_destroy(context);
        return fail("load");
    }

    /* Inputs a, g, b (declared in that order), each filled by its own rule. */
    size_t n_in = weft_model_input_count(model);
    weft_buffer inputs[3];
    if (n_in != 3) {
        fprintf(stderr, "expected 3 inputs, the model has %zu\n", n_in);
        return 1;
    }
    for (size_t i = 0; i < n_in; i++) {
        weft_tensor_info info;
        if (weft_model_input(model, i, &info) != WEFT_OK) return fail("input");
        if (info.dtype != WEFT_F32) {
            fprintf(stderr, "input %s is not f32\n", info.name);
            return 1;
        }
        float *x = malloc(info.bytes ? info.bytes : 1);
        for (size_t e = 0; e < info.elements; e++) {
            if (i == 0) x[e] = (float)((long)(e * 7 % 13) - 6) / 4.0f; /* a */
            else if (i == 1) x[e] = 1.0f + (float)e / 8.0f;             /* g */
            else x[e] = (float)e / 16.0f;                               /* b */
        }
        inputs[i] = (weft_buffer){x, info.bytes};
    }

    weft_tensor_info out_info;
    if (weft_model_output(model, 0, &out_info) != WEFT_OK) return fail("output");
    float *out = malloc(out_info.bytes ? out_info.bytes : 1);
    weft_buffer outputs[1] = {{out, out_info.bytes}};
    for (int call = 0; call < 3; call++) {
        if (weft_model_run(model, inputs, n_in, outputs, 1) != WEFT_OK) return fail("run");
    }

    printf("# %s:", out_info.name);
    for (size_t a = 0; a < out_info.rank; a++)
        printf(" %s=%zu", out_info.axes[a], out_info.lengths[a]);
    printf("\n");
    for (size_t e = 0; e < out_info.elements; e++) printf("%.9g\n", out[e]);

    for (size_t i = 0; i < n_in; i++) free(inputs[i].data);
    free(out);
    weft_model_destroy(model);
    weft_context_destroy(context);
    return 0;
}
