/* Internal view of the hierarchical model (struct lc_hibert, HIBERT): its two stacks of Transformer
 * blocks (sentence encoder, document encoder), the extraction head, the parameter table laid out from one
 * tensor list (nn/tensors.h) and the activations planned once for the largest batch. */
#ifndef LC_MODELS_HIBERT_H
#define LC_MODELS_HIBERT_H

#include "core/table.h"
#include "longctx.h"
#include "nn/stacks.h"
#include "nn/tensors.h"
#include "nn/nn.h"

/* Stack ids: lc_tensor.stack of every tensor (the head's tensors belong to no stack of blocks). */
enum { LC_HIBERT_SENT = 0, LC_HIBERT_DOC = 1, LC_HIBERT_HEAD = 2, LC_HIBERT_STACKS = 2, LC_HIBERT_DEC = 3 };

/* The sentence decoder of pre-training: the shared decoder stack (nn/stacks.h) over the selected
 * sentences packed, cross-attending to their documents' rows of the document encoder's output, plus the
 * document vector added to every input row. */
typedef struct {
    lc_dec_stack s;        /* wte = dec.wte [258, C]: bytes, EOS, BOS; the output projection is rows 0..256 */
    float *in_w, *in_b, *g_in_w, *g_in_b; /* dec.proj [C, C_doc] of the added document vector (widths differ) */
    float *vin, *vproj, *dvin, *dvproj; /* [max_seqs, C_doc], [max_seqs, C]: the added document vectors */
    long count;            /* targets of the last forward */
} lc_hibert_dec;

struct lc_hibert {
    lc_hibert_config cfg;
    lc_hibert_limits lim; /* resolved (no zeros) */
    uint64_t seed;
    long step;
    int noise_rank, noise_ranks; /* processes training together (lc_hibert_step_seed): each its own dropout */
    int threads;
    lc_enc_stack st[LC_HIBERT_STACKS];
    lc_hibert_dec dec;

    lc_tensor_list tensors;
    lc_table ptab, stab;
    float *params, *grads, *adam_m, *adam_v, *state;
    float *wte, *g_wte;           /* sent.wte [258, C_s] */
    float *in_w, *in_b, *g_in_w, *g_in_b; /* doc.proj [C_d, C_s] (NULL when the widths agree) */
    float *head_w, *head_b, *g_head_w, *g_head_b; /* head [1, C_d], [1] */
    float *words, *g_words;       /* sent.words [cfg.sent_words, C_s] (NULL when 0) */
    float *feat_w, *g_feat_w;     /* head.features [1, cfg.head_features] (NULL when 0) */
    float *feats;                 /* [max_sents, cfg.head_features] the last extraction's features, batch order */
    int head_feats;               /* the last head forward added feats (backward: their gradient) */

    lc_pass_work w;               /* activations, attention workspace, global positions */
    int *tok, *pos;               /* [sentence rows] symbol and position of every packed sentence row */
    int *s_row;                   /* [max_sents] the EOS row of sentence i (batch order) */
    int *d_row, *d_pos;           /* [max_sents] the document row and sentence position of sentence i */
    int *doc_first;               /* [max_docs] batch index of each document's first sentence */
    int *doc_of;                  /* [max_sents] the document of each batch sentence */
    long *keys;                   /* [max(max_sents, max_docs)] sorting scratch: (longest first, index) */
    float *doc_in, *d_doc_in;     /* [max_sents, C_s] sentence vectors in document-row order */
    float *logit_rows, *dlogit_rows; /* [max_sents] the head's output per document row */
    float *scores;                /* [max_sents] batch order */
    uint8_t *labels;              /* [max_sents] the last forward's labels */
    const float *sent_out;        /* the sentence encoder's final hidden state of the last forward */
    const float *doc_out;         /* the document encoder's final hidden state of the last forward */
    int n_docs, n_sents, have_labels, cur_train;
    int pretrained;               /* the last forward was pre-training (lc_hibert_backward's branch) */
    int intruder_grads;           /* and with intruders: the sentence vectors already hold their gradient */
    const uint8_t *enc_masked;    /* while encoding a pre-training batch: [sentences] 1 = read as MASK symbols */
    /* pre-training: the encoders' view of the batch (enc_*: [the sentence stack's max_seqs], the view's
     * sentences then, with intruders, the originals of those the masking rule changed) */
    uint8_t *action, *enc_mask;   /* [max_sents], [max_seqs] */
    int *source, *enc_len;        /* [max_sents], [max_seqs] */
    const uint8_t **enc_sent;     /* [max_seqs] */
    int *vec_row;                 /* [max_sents] intruders: the sentence whose vector each place reads */
    int *word_id, *word_start;    /* sent_words: the buckets of sentence i's words (sentence encoder order) are
                                     word_id[word_start[i] .. word_start[i + 1]) */
};

/* The activation plan of the hierarchical model and the classifier (models/classify/classify.c) is nn/stacks.h's
 * lc_act_plan; these names remain for them. */
typedef lc_act_plan lc_hibert_plan;
#define lc_hibert_plan_add lc_act_plan_add
#define lc_hibert_plan_stack lc_act_plan_enc

/* models/hibert/hibert_params.c: list, allocate, bind and initialise the parameters (st[].cfg and layers set); the
 * list alone (into m->tensors). */
lc_status lc_hibert_build_params(lc_hibert *m);
lc_status lc_hibert_list_tensors(lc_hibert *m);
/* models/hibert/hibert.c: the tensor list of a model of config cfg, built from the config alone (nothing else
 * allocated): a checkpoint's table is checked against it before the model is created. */
lc_status lc_hibert_tensor_list(const lc_hibert_config *cfg, lc_tensor_list *out);
void lc_hibert_free_params(lc_hibert *m);

/* models/hibert/hibert_forward.c: the environment of this step's passes (nn/stacks.h). */
lc_pass_env lc_hibert_env(const lc_hibert *m);
/* Both encoders over a batch (checked first; LC_ERR_ARG naming the fault): sentences packed longest first
 * (s_row: each one's EOS row), documents packed longest first (d_row, d_pos), sets n_docs, n_sents,
 * cur_train and doc_out. Backward: from d loss / d doc_out in st[LC_HIBERT_DOC].dh to every parameter. */
lc_status lc_hibert_encode(lc_hibert *m, const lc_hibert_batch *b, int train);
void lc_hibert_encode_backward(lc_hibert *m);
/* Its two halves, for passes that read the sentence vectors twice (models/hibert/hibert_intruder.c). The sentence
 * encoder over n sentences (enc_masked[i], when set, reads sentence i as MASK symbols; n may exceed the
 * batch's sentences up to the sentence stack's plan): s_row[i] is sentence i's EOS row, sent_out the
 * stack's output. The document encoder over b's documents (n_docs, n_sents set): place i reads the vector
 * of sentence vec[i] (vec NULL: i). Backward: the document encoder from st[LC_HIBERT_DOC].dh, ADDING d loss /
 * d vector into st[LC_HIBERT_SENT].dh at the rows it read; then the sentence encoder from that dh. */
lc_status lc_hibert_sentences_forward(lc_hibert *m, int n, const uint8_t *const *sent, const int *len, int train);
lc_status lc_hibert_documents_forward(lc_hibert *m, const lc_hibert_batch *b, const int *vec, int train);
void lc_hibert_documents_backward(lc_hibert *m, const int *vec);
void lc_hibert_sentences_backward(lc_hibert *m);
/* models/hibert/hibert_words.c (cfg.sent_words): the word buckets of the n sentences the sentence encoder reads
 * (enc_masked ones have none); dst (a sentence vector, C_s floats) += the sum of sentence i's word vectors
 * over sqrt(its word count); the backward of that for d loss / d dst = d (adds into g_words). */
void lc_hibert_words_collect(lc_hibert *m, int n, const uint8_t *const *sent, const int *len);
void lc_hibert_words_add(const lc_hibert *m, float *dst, int i);
void lc_hibert_words_backward(lc_hibert *m, const float *d, int i);
/* x: [document rows, C_s] (doc_in's layout): every document's rows minus their mean (the forward of the EOS
 * states' centring, and its own backward: the centring is a symmetric projection). */
void lc_hibert_centre_documents(const lc_hibert *m, float *x);

/* models/hibert/hibert_forward.c: the batch check of lc_hibert_encode (also run on a pre-training batch's originals)
 * and a sentence's length after truncation. */
lc_status lc_hibert_check_batch(const lc_hibert *m, const lc_hibert_batch *b);
int lc_hibert_clipped_len(const lc_hibert *m, int len);
/* models/hibert/hibert_extract.c: the head over doc_out (logit_rows; scores in batch order, plus head.features . feats[i]
 * when with_feats: the batch's features copied into m->feats) and, with labels (copied to m->labels), their
 * summed binary cross-entropy; its backward for the loss times loss_scale (the head's gradients; d loss / d
 * doc_out written to st[LC_HIBERT_DOC].dh). */
lc_status lc_hibert_head_forward(lc_hibert *m, const uint8_t *labels, int with_feats, double *loss_sum);
void lc_hibert_head_backward(lc_hibert *m, float loss_scale);
/* models/hibert/hibert_extract.c: clipping and AdamW after a backward of the mean loss sum / n . */
lc_status lc_hibert_update(lc_hibert *m, const lc_train_options *o, double sum, long n, double *loss);
/* models/hibert/hibert_intruder.c: lc_hibert_pretrain_step_intruders draws its swaps from lc_seed_mix(seed, this). */
#define LC_HIBERT_INTRUDER_STREAM 0x696e7472ULL
/* models/hibert/hibert_intruder.c: the forward of lc_hibert_pretrain_step_intruders (rate and weight > 0): the
 * intruders' passes and their backward (weight times their mean BCE over this batch's sentences; *intruder_bce
 * that mean), then the masked sentences' forward (*nll, *targets as lc_hibert_pretrain_forward), whose
 * backward lc_hibert_backward makes. */
lc_status lc_hibert_pretrain_forward_intruders(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed, double rate,
                                            float weight, double *nll, long *targets, double *intruder_bce);

/* models/hibert/hibert_pretrain.c: lc_hibert_pretrain_forward with each sentence's action and source (index inside
 * its document; lc_hibert_mask_sentences's contract) given in batch order instead of drawn (tests; NULL:
 * those already in m->action, m->source). LC_ERR_ARG for an action or source outside the contract. */
lc_status lc_hibert_pretrain_actions(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *action, const int *source,
                                   int train, double *loss_sum, long *count);
/* models/hibert/hibert_pretrain.c: the start of a pre-training forward: the batch checked and each document j's sentences
 * masked by lc_hibert_mask_sentences(seed + j) into m->action, m->source. */
lc_status lc_hibert_pretrain_mask(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed);
/* models/hibert/hibert_pretrain.c: the decoder's backward into the encoders (lc_hibert_backward's pre-training branch). */
void lc_hibert_pretrain_backward(lc_hibert *m, float loss_scale);
/* Its parts: the batch check, the actions (given, as lc_hibert_pretrain_actions, or already in m->action and
 * m->source when action is NULL) checked against the decoder's plan, and the encoders' view of the batch;
 * the sentence decoder over the last document encoding (doc_out) and its loss; its backward, leaving d loss
 * / d doc_out in st[LC_HIBERT_DOC].dh. */
lc_status lc_hibert_pretrain_view(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *action, const int *source,
                                lc_hibert_batch *view);
lc_status lc_hibert_pretrain_decode(lc_hibert *m, const lc_hibert_batch *b, int train, double *loss_sum, long *count);
void lc_hibert_pretrain_decode_backward(lc_hibert *m, float loss_scale);

/* Random streams: the stacks' dropout (block_stream + layer), their kinds' fixed seeds (attn_stream + stack
 * id, mixed with the layer) and the decoder input's dropout. */
#define LC_HIBERT_ATTN_STREAM 0x6869626572740000ULL
enum { LC_HIBERT_BLOCK_STREAM = 1000, LC_HIBERT_DEC_BLOCK_STREAM = 3000, LC_HIBERT_DEC_EMBED_STREAM = 3 };

/* The seed of this step's dropout masks for stream `what`: of the step, and with noise_ranks > 1 of process
 * noise_rank (step * noise_ranks + noise_rank, as the language model's lc_model_set_noise_key). */
uint64_t lc_hibert_step_seed(const lc_hibert *m, uint64_t what);

#endif
