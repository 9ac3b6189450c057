/*
 * weft.h — weft from C: load a weft graph (.weft) or an ONNX model (.onnx), compile it once for
 * this CPU, and call it many times on buffers you own.
 *
 * Link with libweft_c.so (-lweft_c) or libweft_c.a (plus -lpthread -ldl -lm); docs/c-api.md has
 * the commands, examples/c/ two programs.
 *
 * Conventions, for every function below:
 * - A function that can fail returns a weft_status; on anything but WEFT_OK it changes none of
 *   its out-parameters, and weft_last_error() describes the failure (naming the input, output,
 *   variable, axis, file or op at fault).
 * - Arrays are row-major in their tensor's declared axis order (the order weft_tensor_info
 *   lists), with no padding: element (i0, ..., ir) of lengths (n0, ..., nr) is at
 *   ((i0 * n1 + i1) * n2 + ...) * element size. Buffers must be aligned to their element size
 *   and hold exactly `elements` elements (`bytes` = elements * element size); a bool element is
 *   one byte holding 0 or 1.
 * - Objects are freed with their *_destroy function; NULL is accepted there and ignored.
 * - Strings and arrays that a function returns stay valid while the object they came from lives.
 * - A weft_model may be run from several threads at once; variables are read and written
 *   between runs, never torn (a run sees a variable's value from before or after a write).
 * - No function aborts or unwinds into C: a bug inside weft returns WEFT_ERROR_INTERNAL.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface; weft_api_version() returns the library's. */
#define WEFT_API_VERSION 1

/* What a call returned. */
typedef enum weft_status {
    WEFT_OK = 0,
    /* A NULL pointer, an index out of range, a buffer of the wrong size or alignment, a bool
     * element other than 0 or 1, a malformed AXIS=LEN binding. */
    WEFT_ERROR_ARGUMENT = 1,
    /* A file could not be read. */
    WEFT_ERROR_IO = 2,
    /* The model is not valid: it does not parse or import, an axis length is left unbound or
     * bound to a name it does not declare, it has no outputs. */
    WEFT_ERROR_MODEL = 3,
    /* Compiling failed (for instance an op this CPU cannot run). */
    WEFT_ERROR_COMPILE = 4,
    /* A run would need more memory than the context's budget allows. */
    WEFT_ERROR_MEMORY = 5,
    /* A run failed. */
    WEFT_ERROR_RUN = 6,
    /* A bug in weft, caught at this boundary; please report it with the message. */
    WEFT_ERROR_INTERNAL = 7
} weft_status;

/* An element type. */
typedef enum weft_dtype {
    WEFT_F32 = 0,
    WEFT_F64 = 1,
    WEFT_I32 = 2,
    WEFT_I64 = 3,
    WEFT_BOOL = 4 /* one byte, 0 or 1 */
} weft_dtype;

/* Options shared by the models a context loads. */
typedef struct weft_context weft_context;

/* One compiled model: its inputs (the graph's placeholders), outputs and variables. */
typedef struct weft_model weft_model;

/* What a model's input, output or variable is. */
typedef struct weft_tensor_info {
    const char *name;         /* its name in the graph */
    weft_dtype dtype;         /* its element type */
    size_t rank;              /* how many axes it has */
    const char *const *axes;  /* rank axis names, major to minor */
    const size_t *lengths;    /* rank lengths, in the same order */
    size_t elements;          /* the product of the lengths (1 for rank 0) */
    size_t bytes;             /* elements * the element's size */
} weft_tensor_info;

/* A buffer you own: `data` holds `bytes` bytes. */
typedef struct weft_buffer {
    void *data;
    size_t bytes;
} weft_buffer;

/* The interface version the library implements (WEFT_API_VERSION when it matches). */
uint32_t weft_api_version(void);

/* The message of the last call on this thread that did not return WEFT_OK ("" before any);
 * valid until the next failing call on this thread. Never NULL. */
const char *weft_last_error(void);

/* Bytes per element of `dtype` (0 for a value that is not a weft_dtype). */
size_t weft_dtype_size(weft_dtype dtype);

/* A context whose models run their parallel loops on `threads` threads, the calling one
 * included (0: the WEFT_NUM_THREADS environment variable, else every core), and refuse to be
 * loaded when a run would need more than `memory_budget` bytes (0: the WEFT_MAX_BYTES
 * environment variable, else the machine's physical memory). */
weft_status weft_context_create(size_t threads, uint64_t memory_budget, weft_context **out);

/* Frees a context; models it loaded stay valid. */
void weft_context_destroy(weft_context *context);

/* Loads the graph in the .weft or .onnx file at `path` (UTF-8), binds the axes in `bindings`
 * ("AXIS=LEN" each, `binding_count` of them; NULL when 0) and compiles its outputs for this
 * CPU, as a model whose inputs are its placeholders in declaration order. Every axis must
 * have a length afterwards. Variables start at their initial values. */
weft_status weft_model_load(weft_context *context, const char *path,
                            const char *const *bindings, size_t binding_count,
                            weft_model **out);

/* Frees a model. No run of it may be in progress. */
void weft_model_destroy(weft_model *model);

/* How many inputs, outputs and variables (variables and persistent tensors) it has. */
size_t weft_model_input_count(const weft_model *model);
size_t weft_model_output_count(const weft_model *model);
size_t weft_model_variable_count(const weft_model *model);

/* What input, output or variable `index` is. */
weft_status weft_model_input(const weft_model *model, size_t index, weft_tensor_info *info);
weft_status weft_model_output(const weft_model *model, size_t index, weft_tensor_info *info);
weft_status weft_model_variable(const weft_model *model, size_t index, weft_tensor_info *info);

/* Runs the model: reads `inputs` (input_count buffers, in input order; read in place, never
 * written) and writes `outputs` (output_count buffers, in output order; written in place by
 * the kernels where weft can, else copied in once), which must not overlap each other or an
 * input. A model whose graph assigns variables (a training step) updates them when the run
 * succeeds; on a failure the outputs may hold anything and no variable changes. */
weft_status weft_model_run(weft_model *model, const weft_buffer *inputs, size_t input_count,
                           const weft_buffer *outputs, size_t output_count);

/* Copies variable `index`'s current value into `value`, or sets it from `value`. */
weft_status weft_model_read_variable(const weft_model *model, size_t index, weft_buffer value);
weft_status weft_model_write_variable(weft_model *model, size_t index, weft_buffer value);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
