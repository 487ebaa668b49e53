// Thin C wrappers for libyaml. The event struct keeps its payload in an anonymous union
// whose members Swift imports awkwardly; these accessors keep the parser adapter readable.
// Only KeelContractTools imports this module.
#ifndef KEEL_CYAML_SHIM_H
#define KEEL_CYAML_SHIM_H

#include <yaml.h>

/// The scalar value of a YAML_SCALAR_EVENT (NULL for other events).
static inline const unsigned char *keel_yaml_event_scalar_value(const yaml_event_t *event) {
    return event->type == YAML_SCALAR_EVENT ? event->data.scalar.value : NULL;
}

/// The byte length of a YAML_SCALAR_EVENT's value (0 for other events).
static inline size_t keel_yaml_event_scalar_length(const yaml_event_t *event) {
    return event->type == YAML_SCALAR_EVENT ? event->data.scalar.length : 0;
}

/// The scalar style (plain, single-quoted, literal, ...) of a YAML_SCALAR_EVENT.
static inline yaml_scalar_style_t keel_yaml_event_scalar_style(const yaml_event_t *event) {
    return event->type == YAML_SCALAR_EVENT ? event->data.scalar.style : YAML_ANY_SCALAR_STYLE;
}

/// The anchor name of an ALIAS event (NULL for other events).
static inline const unsigned char *keel_yaml_event_alias_anchor(const yaml_event_t *event) {
    return event->type == YAML_ALIAS_EVENT ? event->data.alias.anchor : NULL;
}

/// The anchor of a SCALAR, SEQUENCE_START or MAPPING_START event (NULL when none).
static inline const unsigned char *keel_yaml_event_anchor(const yaml_event_t *event) {
    switch (event->type) {
    case YAML_SCALAR_EVENT: return event->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT: return event->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT: return event->data.mapping_start.anchor;
    default: return NULL;
    }
}

/// The explicit tag of a SCALAR, SEQUENCE_START or MAPPING_START event (NULL when none).
static inline const unsigned char *keel_yaml_event_tag(const yaml_event_t *event) {
    switch (event->type) {
    case YAML_SCALAR_EVENT: return event->data.scalar.tag;
    case YAML_SEQUENCE_START_EVENT: return event->data.sequence_start.tag;
    case YAML_MAPPING_START_EVENT: return event->data.mapping_start.tag;
    default: return NULL;
    }
}

#endif
