"""Train a two-layer perceptron on the bundled digits, written as nGraph-python wrote models:
axes, placeholders, variables, dot, softmax, cross-entropy, deriv, assign, sequential and
``make_transformer().computation``. The batch axis N is unbound: each call's arrays give its
length, so one graph serves the training batches and the whole test set.

    python python/examples/digits_mlp.py          # prints the loss per epoch and the accuracy
"""

import numpy as np

import weft as ng
import weft.transformers as ngt


def train(epochs=60, batch=32, hidden=64, lr=0.1, seed=0, backend="jit", log=print):
    """Trains on 80 % of the digits and returns the accuracy on the other 20 %."""
    ng.reset_default_graph()  # a graph of its own (not needed: names are labels; it frees the old ops)
    rng = np.random.default_rng(seed)
    images, labels = ng.digits()
    order = rng.permutation(len(labels))
    test, fit = order[:len(order) // 5], order[len(order) // 5:]

    N = ng.make_axis(name="N")                      # bound by each call
    P = ng.make_axis(length=images.shape[1], name="P")
    H = ng.make_axis(length=hidden, name="H")
    K = ng.make_axis(length=10, name="K")

    x = ng.placeholder([N, P], name="x")
    y = ng.placeholder([N], dtype=np.int64, name="y")

    def weights(axes, fan_in):
        shape = tuple(a.length for a in axes)
        return rng.normal(0.0, fan_in ** -0.5, shape).astype(np.float32)

    w1 = ng.variable([P, H], initial_value=weights([P, H], P.length), name="w1")
    b1 = ng.variable([H], initial_value=0.0, name="b1")
    w2 = ng.variable([H, K], initial_value=weights([H, K], H.length), name="w2")
    b2 = ng.variable([K], initial_value=0.0, name="b2")

    hidden_ = ng.tanh(ng.dot(x, w1) + b1)
    logits = ng.dot(hidden_, w2) + b2
    probs = ng.softmax(logits, normalization_axes=[K])
    loss = ng.mean(ng.cross_entropy_multi(probs, ng.one_hot(y, K)), reduction_axes=[N])

    params = [w1, b1, w2, b2]
    updates = [ng.assign(p, p - lr * ng.deriv(loss, p)) for p in params]
    prediction = ng.argmax(logits, reduction_axes=[K])

    transformer = ngt.make_transformer(backend)
    step = transformer.computation(ng.sequential(updates + [loss]), x, y)
    predict = transformer.computation(prediction, x)

    for epoch in range(epochs):
        rng.shuffle(fit)
        losses = []
        for start in range(0, len(fit) - batch + 1, batch):
            rows = fit[start:start + batch]
            losses.append(float(step(images[rows], labels[rows])))
        if log:
            log(f"epoch {epoch + 1:2d}: mean loss {np.mean(losses):.4f}")
    accuracy = float(np.mean(predict(images[test]) == labels[test]))
    if log:
        log(f"test accuracy: {accuracy:.4f} on {len(test)} images")
    return accuracy


if __name__ == "__main__":
    train()
