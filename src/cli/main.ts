console.error('organism: CLI not built yet');
process.exit(1);
