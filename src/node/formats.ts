/** Registers the format loaders that live in their own modules. */
export {};
