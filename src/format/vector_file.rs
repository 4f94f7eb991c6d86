//! The vector cache file layout (placeholder until the vector cache lands).
