// esbuild bundles imported style sheets into the page's CSS file; TypeScript only needs to know they exist.
declare module '*.css';
